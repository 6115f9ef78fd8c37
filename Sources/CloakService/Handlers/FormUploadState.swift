import CloakVault

/// How one form upload flows between the body and the vault, as pure state (issue 58):
/// sealed chunks queued for the vault, one write at a time, the body read only while fewer than
/// ``limit`` bytes wait, the body's end, and the uploads to delete if the submission fails.
/// ``FormUpload`` reads the body and seals the files, tells this type what happened, and does
/// what it says (``Steps``).
struct FormUploadState {
    /// A write for the vault: an upload's start (with its first chunks), or more chunks.
    struct Write {
        var start: StoredFile?
        let uploadID: String
        var chunks: [(index: Int, sealed: [UInt8])]
        var bytes: Int
    }

    /// What the driver does next, in this order.
    struct Steps {
        /// Hand this write to the vault.
        var write: Write?
        /// Ask the body for its next piece.
        var pull = false
        /// The body has ended and everything is stored: validate and finish the files.
        var complete = false
    }

    /// Sealed bytes that may wait for the vault before the body is read further.
    let limit: Int
    private(set) var queue: [Write] = []
    private(set) var queuedBytes = 0
    /// The first write of ``queue`` is with the vault.
    private(set) var isWriting = false
    /// The body is not read until the vault has taken the queue below ``limit``.
    private(set) var isHeldBack = false
    private(set) var bodyEnded = false
    /// Answered (succeeded or failed): nothing more happens but deleting what was started.
    private(set) var isDone = false
    /// Uploads whose start went to the vault: deleted if the submission fails.
    private(set) var startedUploads: [String] = []

    init(limit: Int) { self.limit = limit }

    /// Chunks for the vault; they join the same upload's write still waiting, when there is one.
    mutating func enqueue(_ write: Write) {
        if write.start != nil { startedUploads.append(write.uploadID) }
        queuedBytes += write.bytes
        if write.start == nil, let last = queue.indices.last, queue[last].uploadID == write.uploadID,
            !(isWriting && last == 0)
        {
            queue[last].chunks += write.chunks
            queue[last].bytes += write.bytes
            return
        }
        queue.append(write)
    }

    /// The driver starts reading the body.
    mutating func start() -> Steps { isDone ? Steps() : Steps(pull: true) }

    /// A piece of the body was read and its chunks queued.
    mutating func pieceRead() -> Steps {
        guard !isDone else { return Steps() }
        var steps = Steps(write: nextWrite())
        if queuedBytes < limit { steps.pull = true } else { isHeldBack = true }
        return steps
    }

    mutating func bodyEnd() -> Steps {
        guard !isDone else { return Steps() }
        bodyEnded = true
        return Steps(write: nextWrite(), complete: isComplete)
    }

    /// The vault stored the first write (a failure the driver answers, then ``finish()``).
    mutating func written() -> Steps {
        isWriting = false
        guard !isDone, !queue.isEmpty else { return Steps() }
        queuedBytes -= queue.removeFirst().bytes
        var steps = Steps(write: nextWrite())
        if isHeldBack && queuedBytes < limit {
            isHeldBack = false
            steps.pull = true
        }
        steps.complete = isComplete
        return steps
    }

    /// The submission was answered; what to delete now (a failure's started uploads, once no
    /// write of its own is in flight: else after it, through ``writeEndedAfterFinish()``).
    mutating func finish(failed: Bool) -> [String] {
        isDone = true
        guard failed else {
            startedUploads = []
            return []
        }
        return isWriting ? [] : takeStarted()
    }

    /// The vault refused the first write (the driver answers the failure, then ``finish(failed:)``).
    mutating func writeFailed() { isWriting = false }

    /// A write that was in flight when the submission failed has ended.
    mutating func writeEndedAfterFinish() -> [String] {
        isWriting = false
        return takeStarted()
    }

    private mutating func takeStarted() -> [String] {
        defer { startedUploads = [] }
        return startedUploads
    }

    private var isComplete: Bool { bodyEnded && queue.isEmpty && !isWriting && !isDone }

    private mutating func nextWrite() -> Write? {
        guard !isWriting, let write = queue.first else { return nil }
        isWriting = true
        return write
    }
}
