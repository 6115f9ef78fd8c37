import Synchronization

/// A batch's span (``VaultTracing``), kept apart from the batch's own logic: the executor runs
/// ``runTraced(_:store:_:)`` around each batch, and nothing else of it knows of tracing.
extension VaultExecutor {
    /// Runs `run(jobs)` (one batch) inside the span of the first traced job's making, ended
    /// with the jobs, the store's statements and rows over the batch, and its failures. Without
    /// a traced job, only `run(jobs)`.
    func runTraced(_ jobs: [Job], store: any AliasStore, _ run: ([Job]) -> Void) {
        let traces = jobs.compactMap(\.trace)
        guard let first = traces.first else { return run(jobs) }
        let span = first.startBatch(serving: Array(traces.prefix(VaultTracing.maxLinks)))
        let tally = BatchFailures()
        let before = store.counters
        run(jobs.map(tally.watching))
        let after = store.counters
        span.end(
            VaultBatchSummary(
                jobs: jobs.count, statements: after.statements - before.statements, rows: after.rows - before.rows,
                failedJobs: tally.failed, storeFailed: tally.storeFailed, readsOnly: jobs.allSatisfy(\.reads)))
    }
}

/// Counts the failures of one batch's jobs as their `fail` runs. A batch calls `fail` on the
/// executor thread before it returns (a job's time limit answers through its completion, not
/// `fail`), so the counts are complete when the batch is; atomics only because `fail` is
/// `@Sendable`.
private final class BatchFailures: Sendable {
    private let failures = Atomic<Int>(0)
    private let storeFailures = Atomic<Int>(0)

    var failed: Int { failures.load(ordering: .relaxed) }
    var storeFailed: Bool { storeFailures.load(ordering: .relaxed) > 0 }

    /// `job`, its failures counted here first.
    func watching(_ job: VaultExecutor.Job) -> VaultExecutor.Job {
        var watched = job
        let fail = job.fail
        watched.fail = { [self] error in
            _ = failures.add(1, ordering: .relaxed)
            if error is StoreError { _ = storeFailures.add(1, ordering: .relaxed) }
            fail(error)
        }
        return watched
    }
}
