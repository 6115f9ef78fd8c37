import CloakVault

/// What ``ImportSteps`` needs of a batch: how many input rows it covers, and whether it is the
/// input's last.
package protocol ImportStepsBatch {
    var rows: Int { get }
    var isLast: Bool { get }
}

/// An import job's turns as a pure state machine (issue 76): which rows to read next, when to
/// commit, wait, retry or end, decided here from what the runner reports, and carried out by
/// the runner (``JobRunner/runImport(_:)``). Tests drive it without a store or a thread.
///
/// ```
///  turning ──make──▶ making ──batch──▶ turning ──commit──▶ committing ──moved──▶ turning …
///     │                 │                                      │   (last batch: finished)
///     │                 ├── full ──▶ waiting (room) ──elapsed──▶ turning
///     │                 └── retry ─▶ pausing ───────────────────▶ turning
///     ├── disk below its reserve ──▶ waiting (disk)            ├── failed ──▶ pausing (from the cursor)
///     └── stopping, token revoked ──▶ ended                    └── lost ────▶ ended (let go)
/// ```
/// - Rows are numbered as the job's cursor counts them. The machine alone says where the next
///   batch starts (``Action/make(from:)``): after the last committed row and every row handed
///   out since; after a failed commit, at the cursor again.
/// - On an embedded store the next batch is made while the vault commits one
///   (``Action/commit(_:makeAhead:)``); what that batch found is kept for the next turn.
/// - A full guess window refuses nothing: the job waits, its lease kept, and reads the same
///   rows again.
///
/// An event the runner never reports in a phase traps in debug builds (as in
/// ``ServerConnectionState``); release builds end the job.
package struct ImportSteps<Batch: ImportStepsBatch> {
    private enum Phase {
        case turning
        case making
        case committing(Batch, makingAhead: Bool)
        case waiting
        case pausing
        case ended
    }

    /// Times one batch is tried before its job fails.
    static var attempts: Int { 10 }
    /// The shortest and longest wait for room, in seconds (the limiter's estimate may be a
    /// second; a longer one is waited in turns, the row tried again after each).
    static var shortestWait: Int { 5 }
    static var longestWait: Int { 60 }
    /// The wait for the disk to rise above its reserve, in seconds.
    static var diskWait: Int { 5 }
    static var revoked: String { "the job's token was revoked or changed while the job ran" }

    private var phase = Phase.turning
    /// What the store holds: the cursor, counts and output chunks committed.
    private(set) var progress: JobProgress
    /// Rows handed out past the cursor (the batch in hand and one made ahead).
    private var given: Int64 = 0
    /// A batch made and not yet committed.
    private var inHand: Batch?
    /// The batch made while the one before committed.
    private var ahead: Batch?
    /// Why the input cannot be read past the batch made ahead's rows.
    private var aheadFailure: String?
    private var failures = 0
    private var waitingForRoom = false
    private var waitingForDisk = false
    private let preparesAhead: Bool

    /// A job at `progress` (a resumed or taken-over job starts at its cursor).
    init(from progress: JobProgress, preparesAhead: Bool) {
        self.progress = progress
        self.preparesAhead = preparesAhead
    }

    /// The row after the last committed one.
    var cursor: Int64 { progress.cursor }

    /// A turn: what to do next, given what the runner sees.
    mutating func next(_ checks: Checks) -> Action {
        guard case .turning = phase else { return impossible("next") }
        if checks.stopping { return end(.queued) }
        if checks.belowDiskReserve {
            phase = .waiting
            defer { waitingForDisk = true }
            return .wait(.diskReserve, seconds: Self.diskWait, log: !waitingForDisk)
        }
        waitingForDisk = false
        if inHand == nil, let made = ahead {
            (inHand, ahead) = (made, nil)
        }
        guard let batch = inHand else {
            phase = .making
            return .make(from: progress.cursor + given)
        }
        // The token is asked again for every batch: one revoked meanwhile stops its job.
        guard checks.tokenMayImport else { return end(.failed, failure: Self.revoked) }
        let makeAhead = preparesAhead && !batch.isLast ? progress.cursor + given : nil
        phase = .committing(batch, makingAhead: makeAhead != nil)
        return .commit(batch, makeAhead: makeAhead)
    }

    /// The batch asked for by ``Action/make(from:)``.
    mutating func made(_ made: Made) -> Action {
        guard case .making = phase else { return impossible("made") }
        switch made {
        case let .batch(batch):
            given += Int64(batch.rows)
            inHand = batch
            phase = .turning
            return .check
        case .stopped:
            return end(.queued)
        case let .failed(reason):
            return end(.failed, failure: reason)
        case .retry:
            phase = .pausing
            return .pause(attempt: nil, reason: nil)
        case let .full(seconds):
            phase = .waiting
            defer { waitingForRoom = true }
            return .wait(
                .guessWindows, seconds: min(max(seconds, Self.shortestWait), Self.longestWait), log: !waitingForRoom)
        }
    }

    /// The batch made ahead while the vault committed (``Action/commit(_:makeAhead:)``).
    mutating func madeAhead(_ made: Made) {
        guard case let .committing(batch, makingAhead: true) = phase else { return _ = impossible("madeAhead") }
        phase = .committing(batch, makingAhead: false)
        switch made {
        case let .batch(next):
            given += Int64(next.rows)
            ahead = next
        case let .failed(reason):
            // The rows before it commit first; the job fails after them.
            aheadFailure = reason
        case .stopped, .retry, .full:
            // Asked for again at its turn.
            break
        }
    }

    /// The vault's answer for the batch handed to it.
    mutating func committed(_ answer: Committed) -> Action {
        guard case let .committing(batch, _) = phase else { return impossible("committed") }
        inHand = nil
        switch answer {
        case let .moved(moved):
            failures = 0
            waitingForRoom = false
            given -= Int64(batch.rows)
            progress = moved
            if let aheadFailure { return end(.failed, failure: aheadFailure) }
            if batch.isLast {
                phase = .ended
                return .finished(moved)
            }
            phase = .turning
            return .check
        case .lost:
            phase = .ended
            return .letGo
        case let .failed(reason):
            // Nothing of it was written: the same rows again, from the cursor (the batch made
            // ahead after it too), a few times; a batch that fails each time fails the job,
            // not the node.
            failures += 1
            if failures >= Self.attempts {
                return end(.failed, failure: "a batch failed \(failures) times; the last time: \(reason)")
            }
            (given, ahead, aheadFailure) = (0, nil, nil)
            phase = .pausing
            return .pause(attempt: failures, reason: reason)
        }
    }

    /// The wait asked for by ``Action/wait(_:seconds:log:)`` ended.
    mutating func waited(_ outcome: Waited) -> Action {
        guard case .waiting = phase else { return impossible("waited") }
        switch outcome {
        case .elapsed:
            phase = .turning
            return .check
        case .stopping: return end(.queued)
        case .revoked: return end(.failed, failure: Self.revoked)
        case .lost:
            phase = .ended
            return .letGo
        }
    }

    /// The pause asked for by ``Action/pause(attempt:reason:)`` ended.
    mutating func paused() -> Action {
        guard case .pausing = phase else { return impossible("paused") }
        phase = .turning
        return .check
    }

    private mutating func end(_ state: JobState, failure: String? = nil) -> Action {
        phase = .ended
        return .end(state, failure: failure)
    }

    /// An event the runner never reports in this phase: a bug in the runner. Release builds
    /// fail the job rather than write from a place nobody planned.
    private mutating func impossible(_ event: StaticString) -> Action {
        assertionFailure("ImportSteps: \(event) in \(phase)")
        return end(.failed, failure: "the job's runner lost its place (\(event))")
    }
}
