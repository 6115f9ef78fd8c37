import CloakVault

/// What ``ImportSteps`` is told and what it answers.
extension ImportSteps {
    /// What the runner looks at before each batch.
    package struct Checks: Equatable, Sendable {
        var stopping = false
        var belowDiskReserve = false
        /// The job's token still holds `jobs:import` and `aliases:create`.
        var tokenMayImport = true
    }

    /// What making a batch came to.
    package enum Made {
        case batch(Batch)
        /// The node is stopping.
        case stopped
        /// The input cannot be read past here (cut short, altered): the job fails.
        case failed(String)
        /// The store did not answer, or the batch could not be sealed: the same rows again.
        case retry
        /// The first row found no room in the token's guess windows: wait this many seconds.
        case full(seconds: Int)
    }

    /// What the vault answered for a batch.
    package enum Committed {
        case moved(JobProgress)
        /// The job is no longer this node's (cancelled, taken over): nothing was written.
        case lost
        /// Nothing was written: the store failed.
        case failed(String)
    }

    /// How a wait ended.
    package enum Waited: Equatable, Sendable {
        case elapsed
        case stopping
        case revoked
        /// The lease was lost meanwhile.
        case lost
    }

    package enum WaitReason: Equatable, Sendable {
        case diskReserve
        case guessWindows
    }

    package enum Action {
        /// Look at ``Checks`` and report them (``next(_:)``).
        case check
        /// Read, check and seal the batch of rows starting at row `from`.
        case make(from: Int64)
        /// Hand the batch to the vault; meanwhile make the batch from `makeAhead`, if given
        /// (``madeAhead(_:)``), then report the vault's answer (``committed(_:)``).
        case commit(Batch, makeAhead: Int64?)
        /// Wait, keeping the lease, and report how it ended (``waited(_:)``); `log`: the first
        /// wait of a stretch.
        case wait(WaitReason, seconds: Int, log: Bool)
        /// Sleep a second and report it (``paused()``); `attempt` and `reason` when a commit
        /// failed.
        case pause(attempt: Int?, reason: String?)
        /// End the job in this state.
        case end(JobState, failure: String?)
        /// The last batch committed: the job is done.
        case finished(JobProgress)
        /// The job is no longer this node's: leave it as it is.
        case letGo
    }
}

extension ImportSteps.Action: Equatable where Batch: Equatable {}
extension ImportSteps.Action: Sendable where Batch: Sendable {}
extension ImportSteps.Made: Equatable where Batch: Equatable {}
extension ImportSteps.Made: Sendable where Batch: Sendable {}
extension ImportSteps.Committed: Equatable, Sendable {}
