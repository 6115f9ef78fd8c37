/// Where a job is in its life. A job is `receiving` while its input is stored, `queued` until a
/// node takes it, `running` under a lease, and ends `done`, `failed` or `cancelled` (a cancelled
/// job can be queued again until it expires: ``JobStore/setJobState(_:from:to:now:expiresAt:failure:)``).
/// An export is first counted (queued, running), then `awaiting_approval` until another person
/// approves it (queued again, with its approval) or it expires.
package enum JobState: String, Sendable, CaseIterable {
    case receiving, queued, running, done, failed, cancelled
    case awaitingApproval = "awaiting_approval"

    /// The job will not change again by itself.
    package var isFinal: Bool { self == .done || self == .failed || self == .cancelled }
}

/// The streams a job keeps in its chunks: what it reads, and what it writes.
package enum JobPart: Int, Sendable, CaseIterable {
    case input = 0
    /// The row's own id and its aliases, a JSON line a row imported.
    case mapping = 1
    /// A JSON line a row: its number, its id, `ok` or the refusal's code and reason.
    case advice = 2
    /// An export's file: OpenPGP, encrypted to the job's recipient (its bytes counted as
    /// ``JobProgress/mappingBytes``: a job has one output stream or the other).
    case export = 3
    /// An export's selection as counted (``ExportSelectionSummary``): one chunk.
    case selection = 4
    /// An export's approval (``ExportApproval``): one chunk, written by the approver.
    case approval = 5

    package var name: String {
        switch self {
        case .input: "input"
        case .mapping: "mapping"
        case .advice: "advice"
        case .export: "export"
        case .selection: "selection"
        case .approval: "approval"
        }
    }
}

/// How far a job is: rows read (the cursor: the next batch starts after them), how they ended,
/// and how many output chunks each output stream has.
package struct JobProgress: Sendable, Equatable {
    /// Rows read from the input (header excluded), each one either imported or refused.
    package var cursor: Int64 = 0
    package var imported: Int64 = 0
    package var refused: Int64 = 0
    /// Chunks of each output stream (mapping and advice have one a batch: the same count).
    package var outputChunks: Int = 0
    /// Plaintext bytes of the mapping and advice streams so far (a download's length).
    package var mappingBytes: Int64 = 0
    package var adviceBytes: Int64 = 0

    package init(
        cursor: Int64 = 0, imported: Int64 = 0, refused: Int64 = 0, outputChunks: Int = 0, mappingBytes: Int64 = 0,
        adviceBytes: Int64 = 0
    ) {
        self.cursor = cursor
        self.imported = imported
        self.refused = refused
        self.outputChunks = outputChunks
        self.mappingBytes = mappingBytes
        self.adviceBytes = adviceBytes
    }

    /// The bytes of an output stream.
    package func bytes(_ part: JobPart) -> Int64 {
        switch part {
        case .mapping, .export: mappingBytes
        case .advice: adviceBytes
        default: 0
        }
    }
}

/// The node that runs a job, until when: a node that stops renewing it (killed, cut off from
/// the store) loses the job to the next node that asks once `until` has passed.
package struct JobLease: Sendable, Equatable {
    package var holder: String
    package var until: Int64

    package init(holder: String, until: Int64) {
        self.holder = holder
        self.until = until
    }
}

/// One batch's step, committed with the batch's records or not at all
/// (``JobStore/advanceJob(_:holder:from:to:leaseUntil:outputs:now:)``).
package struct JobOutputChunk: Sendable, Equatable {
    package var part: JobPart
    package var index: Int
    package var sealed: [UInt8]

    package init(part: JobPart, index: Int, sealed: [UInt8]) {
        self.part = part
        self.index = index
        self.sealed = sealed
    }
}
