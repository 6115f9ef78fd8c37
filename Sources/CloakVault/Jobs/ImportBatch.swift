import CloakCore
import CloakCrypto

/// One row of an import (issue 60), as the runner read and checked it on its own thread: the
/// values the vault aliases, under the names the mapping file gives them, or why the row is
/// refused before the vault sees it.
package struct ImportRow: Sendable {
    /// The line the row starts on in the input (the advice file's row number).
    package var line: Int
    /// The row's own id (nil when the row could not be read far enough to have one).
    package var id: String?
    package var outcome: Result<[ImportValue], ImportRefusal>

    package init(line: Int, id: String?, outcome: Result<[ImportValue], ImportRefusal>) {
        self.line = line
        self.id = id
        self.outcome = outcome
    }
}

/// A value of a row: its field's name, in the row's group and (for the form's aliased fields)
/// in the mapping file.
package struct ImportValue: Sendable {
    package var key: String
    package var request: AliasRequest
    /// Whether the mapping file names its alias: false for what is stored only as a part of the
    /// row's group (its id, a name or an expiry the form checks but does not alias).
    package var inMapping: Bool

    package init(key: String, request: AliasRequest, inMapping: Bool = true) {
        self.key = key
        self.request = request
        self.inMapping = inMapping
    }
}

/// Why a row was not imported: a VGSError code and words of Cloak's (never the value).
package struct ImportRefusal: Error, Sendable, Equatable {
    package var code: Int
    package var reason: String

    package init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// A batch of an import's rows, taken by the vault as one job: their records, the batch's
/// mapping and advice lines and the job's new cursor commit together, or none of them does.
/// Its values are sealed, fingerprinted and given their first candidates when it is made
/// (``Vault/prepareImport(_:isLast:)``, on the runner's thread), so the runner can make the
/// next batch while the vault commits this one.
package struct ImportBatch: Sendable {
    package var rows: [ImportRow]
    /// The input has no row after these: the job ends with this batch.
    package var isLast: Bool
    let prepared: [PreparedAlias]

    /// The most rows a batch takes: its output chunks stay far under ``JobSeal/chunkLimit``
    /// (a row's lines are bounded by ``ImportLines``), and the vault thread is held for a few
    /// milliseconds at a time.
    package static let maxRows = 256
}

/// Where a batch goes: the job, its holder and where the job is (the batch is taken only from
/// there: ``JobStore/advanceJob(_:holder:from:to:leaseUntil:outputs:now:)``), and the lease
/// and expiry it sets.
package struct ImportStep: Sendable {
    package var job: JobID
    package var holder: String
    package var from: JobProgress
    package var leaseUntil: Int64
    /// When a finished job and its outputs are deleted.
    package var expiresAt: Int64
    package var seal: JobSeal

    package init(job: JobID, holder: String, from: JobProgress, leaseUntil: Int64, expiresAt: Int64, seal: JobSeal) {
        self.job = job
        self.holder = holder
        self.from = from
        self.leaseUntil = leaseUntil
        self.expiresAt = expiresAt
        self.seal = seal
    }
}

/// The job's lease or cursor moved under the batch (another node took the job over, or it was
/// cancelled): nothing of the batch was written.
package struct ImportBatchLost: Error, Sendable {}

/// The JSON lines of the outputs.
package enum ImportLines {
    /// The longest row id taken (longer ones are refused: the id is echoed in both outputs).
    package static let maxIDBytes = 128
    /// Reasons are cut to this many bytes in the advice file.
    package static let maxReasonBytes = 300

    /// The id as the outputs echo it: nil for one over ``maxIDBytes`` or one that holds a card
    /// number (a column mapped the wrong way round). Every id passes here, whatever refused its
    /// row, so no path can echo a card number.
    static func echoed(_ id: String?) -> String? {
        guard let id, id.utf8.count <= maxIDBytes, CardScan.cards(in: id).isEmpty else { return nil }
        return id
    }

    /// `{"row":…,"id":…,"aliases":{…}}`, and `"group"` when the row's values form one.
    static func mapping(
        line: Int, id: String?, aliases: [(key: String, alias: String)], group: String?, into out: inout JSONWriter
    ) {
        var members: [(String, JSONValue)] = [
            ("row", .int(line)), ("id", echoed(id).map { .string($0) } ?? .null),
            ("aliases", .object(aliases.map { ($0.key, JSONValue.string($0.alias)) })),
        ]
        if let group { members.append(("group", .string(group))) }
        out.write(.object(members))
        out.rawJSON("\n")
    }

    /// `{"row":…,"id":…,"result":"ok"}`, or with `"refused"`, the code and the reason.
    static func advice(line: Int, id: String?, refusal: ImportRefusal?, into out: inout JSONWriter) {
        var members: [(String, JSONValue)] = [("row", .int(line)), ("id", echoed(id).map { .string($0) } ?? .null)]
        if let refusal {
            var reason = refusal.reason
            if reason.utf8.count > maxReasonBytes {
                reason = String(decoding: reason.utf8.prefix(maxReasonBytes), as: UTF8.self)
            }
            members += [("result", .string("refused")), ("code", .int(refusal.code)), ("reason", .string(reason))]
        } else {
            members.append(("result", .string("ok")))
        }
        out.write(.object(members))
        out.rawJSON("\n")
    }
}
