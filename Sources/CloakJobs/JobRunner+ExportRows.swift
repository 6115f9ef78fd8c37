import CloakCore
import CloakCrypto
import CloakVault
import Foundation
import Synchronization

/// A rows export's walk (issue 76): the groups in id order, then the records that are in no
/// group, each a group of one; every row's parts through the selection's filter, as the value
/// layouts' walk does records. Counting and writing walk alike and fold the same digest.
extension JobRunner {
    /// The most field names (the file's columns) a rows export takes: a column a name, on every
    /// line of a CSV, and callers of `POST /aliases` name their own fields.
    static let maxRowsFields = 256

    /// What a rows walk found besides its pages.
    package struct RowsWalked {
        var digest: String
        var counts: ExportSummary.GroupCounts
    }

    /// Each page of the selection's rows, in order, to `page` (values opened when `open`). The
    /// digest covers the selection, its second and the layout, then each row's group, parts
    /// (field name, record, alias) and metadata in order, then the field names in column order.
    func walkRows(
        _ job: StoredJob, _ spec: ExportSpec, filter: ExportFilter, open: Bool, renews: Bool,
        page: (ExportGroupPage) throws -> Void
    ) throws -> RowsWalked {
        var digest = Digest.sha256(
            JSONWriter.encode(spec.selectionJSON) + Array("\n\(filter.asOf)\nlayout \(spec.layout.rawValue)".utf8))
        var counts = ExportSummary.GroupCounts(fields: [], single: 0, partial: 0)
        var known = Set<String>()
        var lease = freshLease()
        let vault = dependencies.vault
        let reads = ExportReads(self)
        for ungrouped in [false, true] {
            var after: String?
            repeat {
                if stopping.load(ordering: .relaxed) { throw Walk.stopped }
                guard !renews || renew(job, job.progress, lease: &lease) != false else { throw Walk.lost }
                let from = after
                let result = reads.read { store in
                    ungrouped
                        ? try vault.exportUngrouped(
                            after: from, limit: Self.exportPage, filter: filter, open: open, in: store)
                        : try vault.exportGroups(
                            after: from, limit: Self.exportPage, filter: filter, open: open, in: store)
                }
                guard case let .success(found) = result else {
                    if case let .failure(error as VaultError) = result, case let .unavailable(reason) = error,
                        reason.hasPrefix("group ")
                    {
                        throw Walk.failed(reason)
                    }
                    throw Walk.failed("the store could not be read")
                }
                for row in found.rows {
                    // Each row folded as a JSON array (its group, each part's name, record and
                    // alias, its metadata): a form's field name or an alias may hold any byte,
                    // and no two different rows encode alike.
                    var members: [JSONValue] = [row.group.map { .string($0) } ?? .null]
                    for part in row.parts {
                        members.append(.array([.string(part.name), .string(part.record), .string(part.alias)]))
                        if known.insert(part.name).inserted { counts.fields.append(part.name) }
                    }
                    members.append(.object(row.metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
                    digest = Digest.sha256(digest + JSONWriter.encode(.array(members)))
                    guard counts.fields.count <= Self.maxRowsFields else {
                        throw Walk.failed(
                            "the selection's rows have more than \(Self.maxRowsFields) field names: select fewer rows "
                                + "(a form, metadata, a classifier)")
                    }
                    if row.group == nil { counts.single += 1 }
                    if row.leftOut > 0 { counts.partial += 1 }
                }
                try page(found)
                after = found.next
            } while after != nil
        }
        digest = Digest.sha256(digest + JSONWriter.encode(.array(counts.fields.map { .string($0) })))
        return RowsWalked(digest: Hex.string(digest), counts: counts)
    }
}
