/// The vault's side of tracing, without a tracing library: CloakVault knows only these types,
/// and CloakService implements them with swift-distributed-tracing (`VaultCallTrace`).
///
/// A vault call that is traced binds its trace around the call (``current``); each job the call
/// queues carries it (``VaultExecutor/Job/trace``). When the executor runs a batch holding
/// traced jobs (one store round trip: one transaction, one commit, for every request queued),
/// the first of those traces starts the batch's span (``VaultJobTrace/startBatch(serving:)``),
/// and the executor ends it with what the batch cost (``VaultBatchSummary``). A batch with no
/// traced job costs one scan of its jobs and nothing else.
///
/// ```swift
/// VaultTracing.current.withValue(callTrace) {
///     vault.reveal(aliases, completion: done)  // its job carries `callTrace`
/// }
/// ```
package enum VaultTracing {
    /// The trace of the vault call under way on this thread, nil when it is not traced. A task
    /// local, bound by a synchronous `withValue` on the calling (loop) thread: read where a job
    /// is made, in ``VaultExecutor``'s enqueue, on that same thread and within the call.
    package static let current = TaskLocal<(any VaultJobTrace)?>(wrappedValue: nil)

    /// The most traces one batch's span is given (OpenTelemetry's default limit of links a
    /// span keeps); a larger batch still reports all its jobs in ``VaultBatchSummary/jobs``.
    package static let maxLinks = 128
}

/// The trace of one vault call, as a job carries it. Opaque to the vault: it only hands the
/// traces of a batch to one of them.
package protocol VaultJobTrace: Sendable {
    /// Starts the span of one store round trip, an executor batch serving `jobs` (this trace
    /// among them, at most ``VaultTracing/maxLinks``). Called on the executor thread, before the
    /// batch's first statement.
    ///
    /// - Parameter jobs: the traces of the batch's traced jobs, in queue order.
    /// - Returns: the span, which ``VaultBatchTrace/end(_:)`` ends once the batch is done.
    func startBatch(serving jobs: [any VaultJobTrace]) -> any VaultBatchTrace
}

/// The span of one store round trip, started by ``VaultJobTrace/startBatch(serving:)``.
package protocol VaultBatchTrace: Sendable {
    /// Ends the span with what the batch did. Called once, on the executor thread, after the
    /// batch's commit (or rollback) and before the next batch.
    func end(_ summary: VaultBatchSummary)
}

/// What one executor batch did, for its span: counts only, never a value, alias or key.
package struct VaultBatchSummary: Sendable, Equatable {
    /// The jobs the batch ran, traced or not.
    package var jobs: Int
    /// Statements sent to the store, and rows they read or changed (``AliasStore/counters``
    /// before and after the batch; a batch's new records' own commit included).
    package var statements: Int
    package var rows: Int
    /// Jobs whose completion was a failure (a request's own, such as an alias not found, included).
    package var failedJobs: Int
    /// Whether a failure was the store's (``StoreError``): a commit, a lock, a connection.
    package var storeFailed: Bool
    /// A batch of reads alone (``AliasStore/beginReading()``: no write lock, no savepoints).
    package var readsOnly: Bool

    package init(jobs: Int, statements: Int, rows: Int, failedJobs: Int, storeFailed: Bool, readsOnly: Bool) {
        self.jobs = jobs
        self.statements = statements
        self.rows = rows
        self.failedJobs = failedJobs
        self.storeFailed = storeFailed
        self.readsOnly = readsOnly
    }
}
