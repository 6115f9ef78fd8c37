import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// What a job is, for `cloak jobs` (and the admin API): its state, its counts and its
/// description: names of columns, forms and formats, never a value or a row id.
package enum JobReport {
    /// An export's counted selection and approval, opened with the job's key (nil: not yet).
    package struct ExportDetails: Sendable {
        package var summary: ExportSummary?
        package var approval: ExportApproval?
    }

    package static func exportDetails(_ job: StoredJob, store: any AliasStore, seal: JobSeal) throws -> ExportDetails {
        ExportDetails(
            summary: try ExportSummary.read(job, seal: seal, store: store),
            approval: try ExportApproval.read(job, seal: seal, store: store))
    }

    /// `forReader`: for a token that reads the job without owning or approving it (`jobs:read`):
    /// caller text it carries (an export's metadata selection, a failure naming a file's column)
    /// is told only as ``forReaders(_:)`` tells it.
    package static func json(_ job: StoredJob, details: ExportDetails? = nil, forReader: Bool = false) -> JSONValue {
        let report = json(job, details: details)
        guard forReader, case var .object(members) = report else { return report }
        for index in members.indices {
            switch (members[index].0, members[index].1) {
            case let ("failure", .string(text)): members[index].1 = .string(forReaders(text))
            case ("selection", .object):
                members[index].1 = ExportSpec(stored: job.spec).map { .string(forReaders($0.selectionText)) } ?? .null
            default: break
            }
        }
        return .object(members)
    }

    /// Caller text as a reader who neither owns nor approves a job sees it: what it quoted (a
    /// column's name, a cell, a metadata value) left out, and the rest scrubbed of digit runs.
    package static func forReaders(_ text: String) -> String {
        var out = ""
        var quoted = false
        for character in text {
            if character == "\"" {
                if !quoted { out += "\"…" }
                quoted.toggle()
                if !quoted { out += "\"" }
            } else if !quoted {
                out.append(character)
            }
        }
        if quoted { out += "\"" }
        return Redaction.scrub(out, limit: 300)
    }

    /// Refusals as a reader sees them: each reason told as ``forReaders(_:)`` tells it, those
    /// that become the same counted together, most rows first.
    package static func forReaders(_ reasons: [RefusalCount.Refusal]) -> [RefusalCount.Refusal] {
        var merged: [String: RefusalCount.Refusal] = [:]
        for refusal in reasons {
            let reason = forReaders(refusal.reason)
            merged["\(refusal.code) \(reason)", default: .init(code: refusal.code, reason: reason, rows: 0)].rows +=
                refusal.rows
        }
        return merged.values.sorted { $0.rows > $1.rows || ($0.rows == $1.rows && $0.reason < $1.reason) }
    }

    private static func json(_ job: StoredJob, details: ExportDetails?) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(job.id.text)), ("kind", .string(job.kind.rawValue)), ("state", .string(job.state.rawValue)),
            ("owner", .string(job.owner)),
        ]
        if job.kind == .export { return exportJSON(job, members, details) }
        let spec = ImportSpec(stored: job.spec)
        switch spec?.source {
        case let .form(name)?: members.append(("form", .string(name)))
        case let .format(format)?: members.append(("format", .string(format.rawValue)))
        case nil: break
        }
        // Scrubbed again for a job an older version stored.
        if let file = spec?.fileName { members.append(("file", .string(Redaction.scrub(file, limit: 255)))) }
        if let layout = spec?.layout { members.append(("layout", .string(layout.rawValue))) }
        members += [
            ("rows_read", .int(Int(job.progress.cursor))), ("imported", .int(Int(job.progress.imported))),
            ("refused", .int(Int(job.progress.refused))),
        ]
        if let rows = spec?.rows { members.append(("rows", .int(Int(rows)))) }
        return .object(members + times(job))
    }

    /// An export: its selection, layout, recipient and requester; the rows counted (the
    /// approver's figure), listed aliases found missing, rows written; with `details`, the
    /// selection's digest and the approval.
    private static func exportJSON(
        _ job: StoredJob, _ head: [(String, JSONValue)], _ details: ExportDetails?
    ) -> JSONValue {
        var members = head
        let spec = ExportSpec(stored: job.spec)
        members += [
            ("selection", spec?.selectionJSON ?? .null), ("layout", spec.map { .string($0.layout.rawValue) } ?? .null),
            ("recipient_fingerprint", spec.map { .string($0.fingerprint) } ?? .null),
            ("requester_person", spec.map { .string($0.person) } ?? .null),
            ("rows", .int(Int(job.progress.imported))), ("missing", .int(Int(job.progress.refused))),
            ("exported", .int(Int(job.progress.cursor))),
        ]
        if let details {
            members.append(("selection_digest", details.summary.map { .string($0.digest) } ?? .null))
            members.append(
                (
                    "counted_at",
                    details.summary.map { .string(UTCTimestamp.string(seconds: Int($0.asOf), milliseconds: 0)) }
                        ?? .null
                ))
            if let summary = details.summary {
                members[members.firstIndex { $0.0 == "rows" }!].1 = .int(Int(summary.rows))
                // A rows export's approver sees its columns, its rows that are records in no
                // group, and those that leave a part of their group out (issue 76).
                if let groups = summary.groups {
                    members += [
                        ("fields", .array(groups.fields.map { .string($0) })),
                        ("groups_of_one", .int(Int(groups.single))), ("partial_groups", .int(Int(groups.partial))),
                    ]
                }
            }
            members.append(
                (
                    "approval",
                    details.approval.map { approval in
                        .object([
                            ("token", .string(approval.token)), ("person", .string(approval.person)),
                            ("at", .string(UTCTimestamp.string(seconds: Int(approval.at), milliseconds: 0))),
                        ])
                    } ?? .null
                ))
        }
        return .object(members + times(job))
    }

    /// What every job's report ends with: its times, why it failed, who holds it.
    private static func times(_ job: StoredJob) -> [(String, JSONValue)] {
        func time(_ seconds: Int64) -> JSONValue {
            .string(UTCTimestamp.string(seconds: Int(seconds), milliseconds: 0))
        }
        return [
            ("created_at", time(job.createdAt)), ("updated_at", time(job.updatedAt)),
            ("expires_at", job.expiresAt.map(time) ?? .null), ("failure", job.failure.map { .string($0) } ?? .null),
            ("lease_holder", job.lease.map { .string($0.holder) } ?? .null),
        ]
    }

    /// Why `job`'s `part` file may not be handed out (nil: it may): only a done job's file is
    /// whole, and an export's is never anything but its export's (as the API answers).
    package static func outputRefusal(_ job: StoredJob, _ part: JobPart) -> String? {
        guard (job.kind == .export) == (part == .export) else {
            return "the job is an \(job.kind.rawValue): it has no \(part.name) file"
        }
        guard job.state == .done else {
            return "the job is \(job.state.rawValue): its \(part.name) file is whole once it is done"
        }
        return nil
    }

    /// Writes a done job's mapping, advice or export file: each chunk opened in its place, and
    /// the last one required (a stream cut short in the store is an error, not a shorter file).
    /// A job that is not done is refused before a byte is written: a failed export's chunks
    /// hold a part of its rows (review V, item 3).
    package static func output(
        _ job: StoredJob, _ part: JobPart, store: any AliasStore, ring: KeyRing, write: ([UInt8]) throws -> Void
    ) throws {
        if let refusal = outputRefusal(job, part) { throw ImportIntake.Refused(description: refusal) }
        let seal = try JobSeal(
            job: job.id.text, binding: job.sealBinding,
            wrappedKey: FileSeal.WrappedKey(keyID: job.keyID, sealed: job.wrappedKey), ring: ring)
        var index = 0
        var sawLast = false
        while !sawLast {
            let chunks = try store.jobChunks(job.id, part: part, from: index, limit: 16)
            guard !chunks.isEmpty else { break }
            for sealed in chunks where !sawLast {
                let opened = try seal.open(sealed, part: part.rawValue, index: index)
                try write(opened.bytes)
                sawLast = opened.isLast
                index += 1
            }
        }
        guard sawLast else {
            throw ImportIntake.Refused(description: "the job's \(part.name) file is cut short in the store")
        }
    }

    /// An import's refusals by reason as far as its committed advice goes, read from `store`
    /// here (the CLI; the API reads them off the vault's thread, ``JobRefusals``).
    package static func refusals(_ job: StoredJob, store: any AliasStore, seal: JobSeal, limit: Int = 20) throws
        -> (reasons: [RefusalCount.Refusal], otherRows: Int)
    {
        try RefusalCount.read(job, seal: seal) { from in
            try store.jobChunks(job.id, part: .advice, from: from, limit: 16)
        }.result(limit: limit)
    }

    /// A job's refusals as the API answers them.
    package static func refusalsJSON(_ reasons: [RefusalCount.Refusal], otherRows: Int) -> JSONValue {
        .object([
            (
                "data",
                .array(
                    reasons.map {
                        .object([("code", .int($0.code)), ("reason", .string($0.reason)), ("rows", .int($0.rows))])
                    })
            ),
            ("other_rows", .int(otherRows)),
        ])
    }
}
