import CloakCore
import CloakCrypto
import CloakVault

/// An export's selection as the runner counted it (its ``JobPart/selection`` chunk, sealed
/// under the job's key): what an approver approves.
package struct ExportSummary: Sendable, Equatable {
    /// Records selected.
    package var rows: Int64
    /// Listed aliases that found no record the export may take.
    package var missing: Int64
    /// SHA-256 (hexadecimal) of the selection, the time it was counted at and, for a list, the
    /// aliases listed.
    package var digest: String
    package var asOf: Int64
    /// A rows export's (issue 76; nil for a value layout): the field names, in the order the
    /// file's columns take, which the digest covers.
    package var groups: GroupCounts?

    /// What a rows export's count found beyond its rows.
    package struct GroupCounts: Sendable, Equatable {
        package var fields: [String]
        /// Rows that are records in no group (stored before groups, or alone).
        package var single: Int64
        /// Rows that leave a part of their group out (VOLATILE, expired, deleted).
        package var partial: Int64
    }

    package init(rows: Int64, missing: Int64, digest: String, asOf: Int64, groups: GroupCounts? = nil) {
        self.rows = rows
        self.missing = missing
        self.digest = digest
        self.asOf = asOf
        self.groups = groups
    }

    var encoded: [UInt8] {
        var members: [(String, JSONValue)] = [
            ("rows", .int(Int(rows))), ("missing", .int(Int(missing))), ("digest", .string(digest)),
            ("as_of", .int(Int(asOf))),
        ]
        if let groups {
            members += [
                ("fields", .array(groups.fields.map { .string($0) })), ("single", .int(Int(groups.single))),
                ("partial", .int(Int(groups.partial))),
            ]
        }
        return JSONWriter.encode(.object(members))
    }

    init?(decoding bytes: [UInt8]) {
        guard let d = try? JSONParser().parse(bytes), let rows = d["rows"]?.int64Value,
            let missing = d["missing"]?.int64Value, let digest = d["digest"]?.stringValue,
            let asOf = d["as_of"]?.int64Value
        else { return nil }
        var groups: GroupCounts?
        if case let .array(names)? = d["fields"] {
            guard let single = d["single"]?.int64Value,
                let partial = d["partial"]?.int64Value
            else { return nil }
            groups = GroupCounts(fields: names.compactMap(\.stringValue), single: single, partial: partial)
        }
        self.init(rows: rows, missing: missing, digest: digest, asOf: asOf, groups: groups)
    }

    /// The job's summary, opened with its key; nil while it is not counted.
    static func read(_ job: StoredJob, seal: JobSeal, store: any AliasStore) throws -> ExportSummary? {
        try sealedDocument(job, .selection, seal: seal, store: store).map { bytes in
            guard let summary = ExportSummary(decoding: bytes) else {
                throw ImportIntake.Refused(description: "the job's selection does not read")
            }
            return summary
        }
    }
}

/// An export's approval (its ``JobPart/approval`` chunk, sealed under the job's key, so one a
/// database writer made does not open): who approved, when, and what they saw.
package struct ExportApproval: Sendable, Equatable {
    package var token: String
    package var person: String
    package var at: Int64
    package var rows: Int64
    package var digest: String
    package var fingerprint: String

    var encoded: [UInt8] {
        JSONWriter.encode(
            .object([
                ("token", .string(token)), ("person", .string(person)), ("at", .int(Int(at))),
                ("rows", .int(Int(rows))),
                ("digest", .string(digest)), ("fingerprint", .string(fingerprint)),
            ]))
    }

    init(token: String, person: String, at: Int64, rows: Int64, digest: String, fingerprint: String) {
        self.token = token
        self.person = person
        self.at = at
        self.rows = rows
        self.digest = digest
        self.fingerprint = fingerprint
    }

    init?(decoding bytes: [UInt8]) {
        guard let d = try? JSONParser().parse(bytes), let token = d["token"]?.stringValue,
            let person = d["person"]?.stringValue, let at = d["at"]?.int64Value,
            let rows = d["rows"]?.int64Value, let digest = d["digest"]?.stringValue,
            let fingerprint = d["fingerprint"]?.stringValue
        else { return nil }
        self.init(token: token, person: person, at: at, rows: rows, digest: digest, fingerprint: fingerprint)
    }

    static func read(_ job: StoredJob, seal: JobSeal, store: any AliasStore) throws -> ExportApproval? {
        try sealedDocument(job, .approval, seal: seal, store: store).map { bytes in
            guard let approval = ExportApproval(decoding: bytes) else {
                throw ImportIntake.Refused(description: "the job's approval does not read")
            }
            return approval
        }
    }
}

/// A job's one-chunk part (its selection, its approval), opened with the job's key; nil when
/// the job has none.
private func sealedDocument(_ job: StoredJob, _ part: JobPart, seal: JobSeal, store: any AliasStore) throws
    -> [UInt8]?
{
    guard let sealed = try store.jobChunks(job.id, part: part, from: 0, limit: 1).first else { return nil }
    return try seal.open(sealed, part: part.rawValue, index: 0).bytes
}
