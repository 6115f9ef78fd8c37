import Foundation
import Synchronization

/// The one thread that touches the store. Requests from every loop thread queue here; the
/// executor takes everything queued, runs it in one transaction (each request inside its own
/// savepoint), commits once, and only then calls the completions: group commit, so a 2xx answer
/// always means "committed", and one fsync serves many requests.
///
/// `@unchecked Sendable`: the store is only touched on the executor's thread; the queue is
/// behind a mutex.
final class VaultExecutor: @unchecked Sendable {
    /// `@unchecked Sendable`: handed from the submitting thread to the executor once; `body` is
    /// only ever called on the executor thread.
    struct Job: @unchecked Sendable {
        /// Runs on the executor thread inside a savepoint; returns what to do once committed.
        let body: (any AliasStore) throws -> (@Sendable () -> Void)
        let fail: @Sendable (any Error) -> Void
        /// Only reads: see ``VaultExecutor/submit(reads:_:completion:)``.
        var reads = false
        /// New records the job writes first, batched with other jobs': see
        /// ``VaultExecutor/submit(newRecords:durable:finish:_:completion:)``.
        var newRecords: NewRecords?
    }

    /// A job's new records, for a store that ``AliasStore/batchesNewRecords``.
    struct NewRecords {
        let writes: [NewRecordWrite]
        let durable: Bool
        /// The job's answer once its writes' outcomes are committed, or (nil) the job that does
        /// what they left undone, run in the batch's transaction after them.
        let finish: ([NewRecordOutcome]) -> Next

        enum Next {
            case answer(@Sendable () -> Void)
            case rest((any AliasStore) throws -> (@Sendable () -> Void))
        }
    }

    private let store: any AliasStore
    /// The jobs waiting; `idle` while the thread sleeps with nothing to do. Only the submit that
    /// finds it idle signals it; one that comes while a batch runs is taken with the next batch,
    /// with no signal (each submit signalled before, and the thread then went round once per
    /// signal, finding nothing the later times).
    private let queue = Mutex<(jobs: [Job], stopping: Bool, idle: Bool)>(([], false, false))
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let maintenance: (any AliasStore) -> Void
    private let maintenanceInterval: TimeInterval
    /// `vault.store_timeout_ms`: nil, no limit (an embedded store on local disk).
    private let deadlines: JobDeadlines?

    /// - Parameters:
    ///   - maintenance: run in its own transaction when idle, at most every `maintenanceInterval`.
    ///   - timeoutMilliseconds: a job not done within it fails with `unavailable` (nil: none).
    init(
        store: any AliasStore, maintenanceInterval: TimeInterval = 5, timeoutMilliseconds: Int? = nil,
        maintenance: @escaping (any AliasStore) -> Void
    ) {
        self.store = store
        self.deadlines = timeoutMilliseconds.map { JobDeadlines(timeoutMilliseconds: $0) }
        self.maintenance = maintenance
        self.maintenanceInterval = maintenanceInterval
        let thread = Thread { [self] in loop() }
        thread.name = "cloak-vault"
        thread.start()
    }

    /// Queues a job that stores new records. Where the store ``AliasStore/batchesNewRecords``,
    /// the writes of every such job in a batch go first, in one
    /// ``AliasStore/commitNewRecords(_:durable:)``; `finish` then makes the job's answer from
    /// its writes' outcomes, or says what is left: `rest(store, outcomes)` runs in the batch's
    /// transaction. Elsewhere, or when that commit hit a conflict the server undid (a deadlock
    /// with another node), the job is `rest(store, nil)` alone.
    func submit<T: Sendable>(
        newRecords writes: [NewRecordWrite], durable: Bool,
        finish: @escaping ([NewRecordOutcome]) -> T?,
        _ rest: @escaping (any AliasStore, [NewRecordOutcome]?) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        guard store.batchesNewRecords, !writes.isEmpty else {
            return submit({ store in try rest(store, nil) }, completion: completion)
        }
        enqueue({ store in try rest(store, nil) }, completion: completion) { completion in
            NewRecords(writes: writes, durable: durable) { outcomes in
                if let value = finish(outcomes) { return .answer({ completion(.success(value)) }) }
                return .rest({ store in
                    let value = try rest(store, outcomes)
                    return { completion(.success(value)) }
                })
            }
        }
    }

    /// Queues `body`; `completion` runs on the executor thread after the commit (or failure).
    ///
    /// - Parameter reads: `body` only reads. A batch of such jobs alone runs in a reading
    ///   transaction (``AliasStore/beginReading()``) without a savepoint each: it takes no write
    ///   lock, so a reveal never holds up another writer of the store (`cloak keys rewrap` beside
    ///   a serving node), and costs two statements less.
    func submit<T: Sendable>(
        reads: Bool = false,
        _ body: @escaping (any AliasStore) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        enqueue(body, reads: reads, completion: completion)
    }

    /// Queues a job: its completion bound to the store's time limit, then `newRecords` (given
    /// that completion) when it has some.
    private func enqueue<T: Sendable>(
        _ body: @escaping (any AliasStore) throws -> T, reads: Bool = false,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void,
        newRecords: ((@escaping @Sendable (Result<T, any Error>) -> Void) -> NewRecords)? = nil
    ) {
        let completion =
            deadlines.map { deadlines in
                // Whichever comes first answers: the job's outcome, or the store's time limit.
                let registration = deadlines.register {
                    completion(
                        .failure(StoreError.unavailable("the store did not answer within vault.store_timeout_ms")))
                }
                return { (result: Result<T, any Error>) in
                    deadlines.finished(registration.id)
                    if registration.claim.take() { completion(result) }
                }
            } ?? completion
        let job = Job(
            body: { store in
                let value = try body(store)
                return { completion(.success(value)) }
            },
            fail: { error in completion(.failure(error)) }, reads: reads, newRecords: newRecords?(completion))
        let (accepted, wasIdle) = queue.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            state.jobs.append(job)
            defer { state.idle = false }
            return (true, state.idle)
        }
        if !accepted {
            completion(.failure(StoreError.unavailable("the vault is shutting down")))
        } else if wasIdle {
            wake.signal()
        }
    }

    /// Finishes everything queued, then stops the thread.
    func close() {
        let first = queue.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        stopped.wait()
    }

    private func loop() {
        var lastMaintenance = Date.distantPast
        while true {
            let (jobs, stopping) = queue.withLock { state -> ([Job], Bool) in
                let jobs = state.jobs
                state.jobs.removeAll(keepingCapacity: true)
                // Set under the lock that `submit` takes: a job queued after this wakes the thread.
                state.idle = jobs.isEmpty
                return (jobs, state.stopping)
            }
            if !jobs.isEmpty { runBatch(jobs) }
            if stopping && jobs.isEmpty {
                stopped.signal()
                return
            }
            // Maintenance (the expiry sweep) runs on time whether the vault is idle or busy.
            if Date().timeIntervalSince(lastMaintenance) >= maintenanceInterval {
                lastMaintenance = Date()
                maintenance(store)
            }
            // After a batch, look again at once; idle, sleep until a submit or the next sweep.
            if jobs.isEmpty { _ = wake.wait(timeout: .now() + .milliseconds(500)) }
        }
    }

    /// Runs one job in its savepoint. A deadlock the server broke by undoing this job's work
    /// (another vault thread or node writing the same values in another order) is retried once.
    private func run(_ job: Job, reading: Bool) throws -> @Sendable () -> Void {
        // Reads have nothing to undo: no savepoint.
        if reading { return try job.body(store) }
        for attempt in 0..<2 {
            do {
                try store.savepoint()
                let deliver = try job.body(store)
                try store.releaseSavepoint()
                return deliver
            } catch let error as StoreError {
                guard case .transient = error, attempt == 0, store.isInTransaction else { throw error }
                store.rollbackToSavepoint()
            }
        }
        throw StoreError.unavailable("a write conflict persisted")
    }

    /// Commits the new records of every job that has some, in one
    /// ``AliasStore/commitNewRecords(_:durable:)``, and answers the jobs that needs nothing more;
    /// returns the jobs left for the batch's transaction.
    private func commitNewRecords(_ jobs: [Job]) -> [Job] {
        let batched = jobs.compactMap { job in job.newRecords.map { (job, $0) } }
        guard !batched.isEmpty else { return jobs }
        var remaining = jobs.filter { $0.newRecords == nil }
        let outcomes: [NewRecordOutcome]
        do {
            outcomes = try store.commitNewRecords(
                batched.flatMap(\.1.writes), durable: batched.contains { $0.1.durable })
        } catch StoreError.transient {
            // Nothing was written: each job runs whole, in its savepoint, which retries once.
            return jobs.map { job in
                var job = job
                job.newRecords = nil
                return job
            }
        } catch {
            for (job, _) in batched { job.fail(error) }
            return remaining
        }
        var offset = 0
        for (job, part) in batched {
            let mine = Array(outcomes[offset..<offset + part.writes.count])
            offset += part.writes.count
            switch part.finish(mine) {
            case let .answer(deliver): deliver()
            case let .rest(body): remaining.append(Job(body: body, fail: job.fail))
            }
        }
        return remaining
    }

    private func runBatch(_ jobs: [Job]) {
        let jobs = store.batchesNewRecords ? commitNewRecords(jobs) : jobs
        guard !jobs.isEmpty else { return }
        let reading = jobs.allSatisfy(\.reads)
        do {
            try reading ? store.beginReading() : store.begin()
        } catch {
            for job in jobs { job.fail(error) }
            return
        }
        var committed: [(deliver: @Sendable () -> Void, fail: @Sendable (any Error) -> Void)] = []
        var failed: [(Job, any Error)] = []
        var index = 0
        while index < jobs.count {
            let job = jobs[index]
            index += 1
            do {
                committed.append((try run(job, reading: reading), job.fail))
            } catch {
                if !reading { store.rollbackToSavepoint() }
                failed.append((job, error))
                if !store.isInTransaction {
                    // The store abandoned the whole transaction by itself (full disk, I/O error):
                    // nothing of this batch is written, and no later job may run outside it.
                    for c in committed { c.fail(error) }
                    committed.removeAll()
                    for rest in jobs[index...] { rest.fail(error) }
                    for (job, error) in failed { job.fail(error) }
                    return
                }
            }
        }
        do {
            try store.commit()
            for c in committed { c.deliver() }
        } catch {
            store.rollback()
            for c in committed { c.fail(error) }
        }
        for (job, error) in failed { job.fail(error) }
    }
}
