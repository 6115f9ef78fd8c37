import Dispatch
import Foundation
import Synchronization

/// The one thread that touches the store. Requests from every loop thread queue here; the
/// executor takes everything queued, runs it in one transaction (each request inside its own
/// savepoint), commits once, and only then calls the completions: group commit, so a 2xx answer
/// always means "committed", and one fsync serves many requests.
///
/// Where the store is shared (PostgreSQL), two more rules keep one stuck writer from holding up
/// every node (issue 44):
///
/// - A conflict the server broke by failing one of this transaction's statements (a deadlock, a
///   lock wait past `lock_timeout`) rolls the whole transaction back and runs it again, once.
///   It is never retried inside the transaction: the earlier jobs' rows would still be held, the
///   other writer would still wait on them, and the retry would close the same cycle again (a
///   convoy). A second conflict fails only the job that met it.
/// - A job past `vault.store_timeout_ms` has been answered 503 by ``JobDeadlines``: it is
///   dropped, not run, so its writes cannot commit after that answer, nor hold up the jobs
///   behind it. Statements wait for another writer's locks for at most a third of that limit
///   (``LockWaitBounded``), so a job and its one retry fail by their own error first.
///
/// `@unchecked Sendable`: the store is only touched on the executor's thread; the queue is
/// behind a mutex.
final class VaultExecutor: @unchecked Sendable {
    /// `@unchecked Sendable`: handed from the submitting thread to the executor once; `body` is
    /// only ever called on the executor thread.
    struct Job: @unchecked Sendable {
        /// Runs on the executor thread inside a savepoint; returns what to do once committed.
        /// It may run twice: a transaction rolled back on a conflict runs all its jobs again.
        var body: (any AliasStore) throws -> (@Sendable () -> Void)
        /// A `var` only so that a batch's span can count failures (``runTraced(_:store:_:)``).
        var fail: @Sendable (any Error) -> Void
        /// Only reads: see ``VaultExecutor/submit(reads:_:completion:)``.
        var reads = false
        /// Writes nothing but its audit notes (an audited reveal): it runs in a writing
        /// transaction, for its events, without a savepoint of its own (``submit(notingReads:completion:)``).
        var notesOnly = false
        /// Copies the audit segment's blocks into the store before the batch runs (a search).
        var drainsAudit = false
        /// Sends no statement (it only notes events made elsewhere): no savepoint, whatever the store.
        var sendsNothing = false
        /// What is left of an audited create whose records the batch's statement already wrote
        /// (``VaultExecutor/insertingNewRecords(_:)``): it always runs, past its deadline too, so
        /// that those records never commit without its events; failing, it rolls the whole
        /// transaction back, for every job to run again whole (`Ending.failedAfterItsRecords`).
        var followsItsRecords = false
        /// New records the job writes first, batched with other jobs': see
        /// ``VaultExecutor/submit(newRecords:durable:finish:_:completion:)``.
        var newRecords: NewRecords?
        /// When the store's time limit answers the job (`DispatchTime` uptime, nanoseconds; nil:
        /// no limit). Taken just before the limit's own registration, so it never falls later.
        var deadline: UInt64?
        /// The trace of the vault call that queued the job (``VaultTracing/current``), read where
        /// the job is made: in `enqueue`, on the submitting thread. Nil for untraced calls and
        /// for jobs the executor makes itself.
        var trace: (any VaultJobTrace)? = VaultTracing.current.get()
        /// Whom the call acts for (``VaultAuditing/current``, read where the job is made): what
        /// the body notes is chained and written in the batch's transaction.
        var audit: (any VaultAuditSubject)? = VaultAuditing.current.get()
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

    /// How a transaction of jobs ended.
    private enum Ending {
        /// Committed or failed: every job is answered.
        case answered
        /// Rolled back whole on a conflict: no job is answered, and all may run again. `at`: the
        /// job whose statement met it (nil: the commit did).
        case conflicted(at: Int?)
        /// The store abandoned a writing transaction by itself (a full disk, an I/O error): its
        /// writes are failed, and its read-only jobs, unanswered, may run again on their own.
        case abandoned(reads: [Job])
        /// Rolled back whole: a job failed after the batch's statement had written its records
        /// (``Job/followsItsRecords``). No job is answered; all run again, each whole in its
        /// savepoint, so that the failing one fails alone and leaves nothing behind.
        case failedAfterItsRecords
    }

    /// The answer of a job dropped past its deadline (the deadline's own answer, when it came first).
    static let overdue = StoreError.unavailable("the store did not answer within vault.store_timeout_ms")

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
    /// This thread's audit trail (nil: events are not kept). Touched on the executor thread only.
    private var trail: AuditTrail?
    /// What the jobs of the transaction under way noted and kept (their savepoints released).
    private var noted: [(subject: any VaultAuditSubject, drafts: [AuditEvent.Draft])] = []
    /// When the store last said its disk is full (``StoreError/full``: SQLite's `SQLITE_FULL`,
    /// PostgreSQL's 53100), `DispatchTime` uptime nanoseconds; 0: never. Read by the service to
    /// keep its disk reserve where it cannot see the store's disk (review V, item 4).
    let reportedFull = Atomic<UInt64>(0)
    /// Set when the audit segment failed to flush (``AuditSegment``): audited answers stop, and
    /// the node says it is not ready, until it restarts.
    let auditFailed = Atomic<Bool>(false)

    /// - Parameters:
    ///   - maintenance: run in its own transaction when idle, at most every `maintenanceInterval`.
    ///   - timeoutMilliseconds: a job not done within it fails with `unavailable` (nil: none);
    ///     a store that can wait on other writers' locks waits at most a third of it.
    init(
        store: any AliasStore, maintenanceInterval: TimeInterval = 5, timeoutMilliseconds: Int? = nil,
        trail: AuditTrail? = nil, maintenance: @escaping (any AliasStore) -> Void
    ) {
        self.store = store
        self.trail = trail
        self.deadlines = timeoutMilliseconds.map { JobDeadlines(timeoutMilliseconds: $0) }
        self.maintenance = maintenance
        self.maintenanceInterval = maintenanceInterval
        // Before the thread starts: from then on only the thread touches the store.
        if let timeoutMilliseconds, let bounded = store as? any LockWaitBounded {
            bounded.boundLockWaits(milliseconds: Self.lockWaitMilliseconds(storeTimeout: timeoutMilliseconds))
        }
        let thread = Thread { [self] in loop() }
        thread.name = "cloak-vault"
        thread.start()
    }

    /// The longest a statement waits for another writer's lock under a store time limit: a
    /// third of it, so that a job's first run and its one retry (see ``VaultExecutor``) can each
    /// wait once and still end by their own error, not the time limit's. With the default 2 s,
    /// 666 ms: below PostgreSQL's default `deadlock_timeout` (1 s), so a deadlock between nodes
    /// usually ends as a lock timeout, which is handled as a deadlock.
    static func lockWaitMilliseconds(storeTimeout: Int) -> Int { max(storeTimeout / 3, 1) }

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
        // An audited create's records commit with its events: its writes then go first in the
        // batch's transaction (``insertingNewRecords(_:)``), not in a commit of their own.
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

    /// Queues `body`, which reads and notes audit events for the subject bound around the call
    /// (``VaultAuditing/current``; an audited reveal): its events are written with its batch's
    /// and committed before `completion`, so it runs in a writing transaction; but it writes
    /// nothing itself, so without a savepoint (a job that fails leaves no note). Unaudited, it
    /// is a read (``submit(reads:_:completion:)``).
    func submit<T: Sendable>(
        notingReads body: @escaping (any AliasStore) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let audited = VaultAuditing.current.get() != nil
        enqueue(body, reads: !audited, notesOnly: audited, completion: completion)
    }

    /// Queues a job: its completion bound to the store's time limit, then `newRecords` (given
    /// that completion) when it has some.
    private func enqueue<T: Sendable>(
        _ body: @escaping (any AliasStore) throws -> T, reads: Bool = false, notesOnly: Bool = false,
        sendsNothing: Bool = false, drainsAudit: Bool = false,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void,
        newRecords: ((@escaping @Sendable (Result<T, any Error>) -> Void) -> NewRecords)? = nil
    ) {
        let deadline = deadlines.map { DispatchTime.now().uptimeNanoseconds + $0.timeoutNanoseconds }
        let completion =
            deadlines.map { deadlines in
                // Whichever comes first answers: the job's outcome, or the store's time limit.
                let registration = deadlines.register { completion(.failure(Self.overdue)) }
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
            fail: { error in completion(.failure(error)) }, reads: reads, notesOnly: notesOnly,
            drainsAudit: drainsAudit, sendsNothing: sendsNothing, newRecords: newRecords?(completion),
            deadline: deadline)
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

    /// Queues audit events made without a vault job of their own (a reveal's, a refusal's, a
    /// token's creation): chained and committed with the next batch; `completion` after.
    func submit(audit drafts: [AuditEvent.Draft], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let subject = Recorded()
        VaultAuditing.current.withValue(subject) {
            enqueue(
                { _ in
                    guard let notes = VaultAuditing.running.get() else { return }
                    for draft in drafts { notes.add(draft) }
                }, notesOnly: true, sendsNothing: true, completion: completion)
        }
    }

    /// Copies the blocks of the audit segment into the store (``AuditSegment``): `completion`
    /// once every event answered before this call is in the store, for a search on another
    /// connection to find.
    func drainAudit(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        enqueue({ _ in }, reads: true, drainsAudit: true, completion: completion)
    }

    /// Queues a writing `body` whose audit events, `drafts`, were made by the caller for the
    /// change it makes (a job's count or its last chunk: review V, item 6): chained and
    /// committed in body's transaction, or dropped with its savepoint when it fails.
    func submit<T: Sendable>(
        _ body: @escaping (any AliasStore) throws -> T, recording drafts: [AuditEvent.Draft],
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        VaultAuditing.current.withValue(Recorded()) {
            enqueue(
                { store in
                    let value = try body(store)
                    if let notes = VaultAuditing.running.get() { for draft in drafts { notes.add(draft) } }
                    return value
                }, completion: completion)
        }
    }

    /// The subject of events made elsewhere: nothing to draft, nothing to hear.
    private struct Recorded: VaultAuditSubject {
        func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation) -> AuditEvent
            .Draft?
        {
            nil
        }
        func noted(_ drafts: [AuditEvent.Draft], stored: Bool) {}
    }

    /// Finishes everything queued (dropping what is past its deadline), then stops the thread.
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
        // The monotonic clock: a wall clock set back would stop the sweep until it caught up.
        var lastMaintenance: UInt64?
        while true {
            let (jobs, stopping) = queue.withLock { state -> ([Job], Bool) in
                let jobs = state.jobs
                state.jobs.removeAll(keepingCapacity: true)
                // Set under the lock that `submit` takes: a job queued after this wakes the thread.
                state.idle = jobs.isEmpty
                return (jobs, state.stopping)
            }
            if !jobs.isEmpty {
                runTraced(jobs, store: store, runBatch)
            }
            trail?.drainIfDue(store, force: stopping && jobs.isEmpty)
            if trail?.hasFailed == true { auditFailed.store(true, ordering: .relaxed) }
            if !jobs.isEmpty { trail?.indexIfDue(store) }
            trail?.reportHeadIfDue()
            if stopping && jobs.isEmpty {
                trail?.reportHead()
                trail?.segment?.release()
                stopped.signal()
                return
            }
            // Maintenance (the expiry sweep) runs on time whether the vault is idle or busy.
            let now = DispatchTime.now().uptimeNanoseconds
            if lastMaintenance.map({ Double(now - $0) / 1e9 >= maintenanceInterval }) ?? true {
                lastMaintenance = now
                maintenance(store)
                trail?.maintain(store)
            }
            // After a batch, look again at once; idle, sleep until a submit or the next sweep.
            if jobs.isEmpty { _ = wake.wait(timeout: .now() + .milliseconds(500)) }
        }
    }

    /// Whether `job`'s time limit has passed (it is answered, or about to be: not worth running).
    private func isOverdue(_ job: Job) -> Bool {
        guard let deadline = job.deadline else { return false }
        return DispatchTime.now().uptimeNanoseconds >= deadline
    }

    /// `jobs` without those past their deadline, which are failed (``overdue``) instead.
    private func droppingOverdue(_ jobs: [Job]) -> [Job] {
        guard deadlines != nil else { return jobs }
        var live: [Job] = []
        live.reserveCapacity(jobs.count)
        for job in jobs {
            if isOverdue(job) {
                job.fail(Self.overdue)
            } else {
                live.append(job)
            }
        }
        return live
    }

    /// `jobs` with the one at `index` moved first: the order a transaction rolled back on that
    /// job's conflict runs again in. The rerun then waits for the other writer (on the row the
    /// job met it at) before it holds any row of the jobs queued ahead of it, the rows the other
    /// writer was waiting for: the other writer finishes, and the cycle does not close again.
    /// Run in the old order, the first jobs could take those rows back before the other writer
    /// woke, and the rerun met the same deadlock (2 runs in 5 of PostgreSQLConflictTests').
    static func leading<T>(_ index: Int?, _ jobs: [T]) -> [T] {
        guard let index, jobs.indices.contains(index), index > 0 else { return jobs }
        var reordered = jobs
        let job = reordered.remove(at: index)
        reordered.insert(job, at: 0)
        return reordered
    }

    /// Marks the time when `error` is the store's full disk (``reportedFull``).
    private func noteFull(_ error: any Error) {
        guard let error = error as? StoreError, case .full = error else { return }
        reportedFull.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Whether the server failed a statement to break a conflict with another writer
    /// (``StoreError/transient(_:)``): running the transaction again can succeed.
    private static func isConflict(_ error: any Error) -> Bool {
        guard let error = error as? StoreError, case .transient = error else { return false }
        return true
    }

    /// Commits the new records of every unaudited job that has some, in one
    /// ``AliasStore/commitNewRecords(_:durable:)``, and answers the jobs that needs nothing more;
    /// returns the jobs left for the batch's transaction (with the audited jobs' new records:
    /// ``insertingNewRecords(_:)``).
    private func commitNewRecords(_ jobs: [Job]) -> [Job] {
        let batched = jobs.compactMap { job in job.audit == nil ? job.newRecords.map { (job, $0) } : nil }
        guard !batched.isEmpty else { return jobs }
        var remaining = jobs.filter { $0.newRecords == nil || $0.audit != nil }
        let outcomes: [NewRecordOutcome]
        do {
            outcomes = try store.commitNewRecords(
                batched.flatMap(\.1.writes), durable: batched.contains { $0.1.durable })
        } catch StoreError.transient {
            // Nothing was written: each job runs whole, in its savepoint.
            return jobs.map(Self.whole)
        } catch {
            noteFull(error)
            for (job, _) in batched { job.fail(error) }
            return remaining
        }
        var offset = 0
        for (job, part) in batched {
            let mine = Array(outcomes[offset..<offset + part.writes.count])
            offset += part.writes.count
            switch part.finish(mine) {
            case let .answer(deliver): deliver()
            case let .rest(body): remaining.append(Job(body: body, fail: job.fail, deadline: job.deadline))
            }
        }
        return remaining
    }

    /// `job` without its batched new records: it runs whole (`rest(store, nil)`), in its savepoint.
    private static func whole(_ job: Job) -> Job {
        var job = job
        job.newRecords = nil
        return job
    }

    /// Stores the new records of every job in `jobs` that has some (audited creates: see
    /// ``commitNewRecords(_:)`` for the others) with one ``AliasStore/insertNewRecords(_:durable:)``,
    /// in the transaction under way, and returns `jobs` with each such job turned into what is
    /// left of it: its answer, with the events its values' outcomes noted and nothing to send
    /// (no savepoint), or the rest of its work. One statement for a group commit's records and
    /// aliases, one for its events, as unaudited creates cost.
    private func insertingNewRecords(_ jobs: [Job]) throws -> [Job] {
        // One already past its deadline is left out (and dropped unrun): once its records are
        // written, a job runs whatever the time (``Job/followsItsRecords``).
        let batched = jobs.indices.filter { jobs[$0].newRecords != nil && !isOverdue(jobs[$0]) }
        guard !batched.isEmpty else { return jobs }
        let parts = batched.map { jobs[$0].newRecords! }
        // A caller who may not reveal waits for a durable commit whatever was found (as
        // `commitNewRecords(_:durable:)` makes it).
        let outcomes = try store.insertNewRecords(parts.flatMap(\.writes), durable: parts.contains(where: \.durable))
        var out = jobs
        var offset = 0
        for (index, part) in zip(batched, parts) {
            let mine = Array(outcomes[offset..<offset + part.writes.count])
            offset += part.writes.count
            var job = Self.whole(jobs[index])
            // `finish` reads nothing: its notes are taken here, and replayed when the job runs.
            let notes = job.audit.map { JobNotes(subject: $0) }
            let next = VaultAuditing.running.withValue(notes) { part.finish(mine) }
            switch next {
            case let .answer(deliver):
                let drafts = notes?.drafts ?? []
                job.followsItsRecords = true
                job.body = { _ in
                    if let running = VaultAuditing.running.get() { for draft in drafts { running.add(draft) } }
                    return deliver
                }
                job.notesOnly = true
                job.sendsNothing = true
            case let .rest(body):
                job.body = body
                job.followsItsRecords = true
            }
            out[index] = job
        }
        return out
    }

    private func runBatch(_ queued: [Job]) {
        var jobs = droppingOverdue(queued)
        if jobs.contains(where: \.drainsAudit) { trail?.drainIfDue(store, force: true) }
        if let trail, trail.hasFailed { jobs = failingAudited(jobs) }
        if store.batchesNewRecords { jobs = commitNewRecords(jobs) }
        guard !jobs.isEmpty else { return }
        // Audited reads whose events are kept apart (a segment, a statement of their own) read
        // in a reading transaction, as unaudited ones do.
        if jobs.allSatisfy({ $0.reads || ($0.notesOnly && trail?.keepsReadsApart == true) }) {
            _ = runTransaction(jobs, reading: true, retryOnConflict: false)
            return
        }
        // Rolled back whole on a conflict: once more, without what went past its deadline meanwhile.
        // Rolled back for a create that failed after its batched records: again, each job whole
        // (once: a job run whole is never batched again).
        var retry = true
        var ending = runTransaction(jobs, reading: false, retryOnConflict: true)
        while true {
            if case let .conflicted(at) = ending, retry {
                retry = false
                jobs = droppingOverdue(Self.leading(at, jobs))
            } else if case .failedAfterItsRecords = ending {
                jobs = droppingOverdue(jobs.map(Self.whole))
            } else {
                break
            }
            ending = runTransaction(jobs, reading: false, retryOnConflict: retry)
        }
        // A write the store could not make (a full disk) fails the writes, not the reveals
        // queued with them (issue 55, item 9): they run again, in a reading transaction of their
        // own (run afresh: what they read before may have been the rolled-back writes).
        if case .abandoned(let reads) = ending {
            _ = runTransaction(droppingOverdue(reads), reading: true, retryOnConflict: false)
        }
    }

    /// `jobs` without those that act for an audited subject, failed instead: the segment failed
    /// to flush, and nothing audited is answered until the node restarts (``AuditSegment``).
    private func failingAudited(_ jobs: [Job]) -> [Job] {
        jobs.filter { job in
            guard job.audit != nil else { return true }
            job.fail(StoreError.unavailable(AuditSegment.Failure.failedBefore.description))
            return false
        }
    }

    /// Runs `jobs` in one transaction (a savepoint each unless `reading`), commits once, then
    /// answers them. A job past its deadline by its turn is failed and not run.
    ///
    /// With `retryOnConflict`, a conflict (``StoreError/transient(_:)``) rolls the whole
    /// transaction back and answers no job: `.conflicted`, the caller runs them again. Without
    /// it, only the job that met the conflict fails (its savepoint rolled back): the server
    /// already broke the cycle by failing its statement, and the others still commit.
    private func runTransaction(_ jobs: [Job], reading: Bool, retryOnConflict: Bool) -> Ending {
        guard !jobs.isEmpty else { return .answered }
        do {
            try reading ? store.beginReading() : store.begin()
        } catch {
            for job in jobs { job.fail(error) }
            return .answered
        }
        noted.removeAll(keepingCapacity: true)
        var jobs = jobs
        if !reading && jobs.contains(where: { $0.newRecords != nil }) {
            do {
                jobs = try insertingNewRecords(jobs)
            } catch {
                noteFull(error)
                store.rollback()
                if retryOnConflict && Self.isConflict(error) { return .conflicted(at: nil) }
                // Nothing was written: each job runs whole, in its savepoint.
                return runTransaction(jobs.map(Self.whole), reading: false, retryOnConflict: retryOnConflict)
            }
        }
        var committed: [(job: Job, deliver: @Sendable () -> Void)] = []
        var failed: [(job: Job, error: any Error)] = []
        for (index, job) in jobs.enumerated() {
            // A job that follows its batched records runs whatever the time: its answer is the
            // deadline's already, but its events commit with its records.
            if isOverdue(job) && !job.followsItsRecords {
                job.fail(Self.overdue)
                continue
            }
            do {
                committed.append((job, try run(job, reading: reading)))
            } catch {
                noteFull(error)
                if retryOnConflict && Self.isConflict(error) && store.isInTransaction {
                    store.rollback()
                    return .conflicted(at: index)
                }
                if job.followsItsRecords && store.isInTransaction {
                    store.rollback()
                    return .failedAfterItsRecords
                }
                if !reading && needsSavepoint(job) { store.rollbackToSavepoint() }
                failed.append((job, error))
                if !store.isInTransaction {
                    // The store abandoned the whole transaction by itself (full disk, I/O error):
                    // nothing of this batch is written, and no later job may run outside it.
                    for f in failed { f.job.fail(f.error) }
                    return abandon(committed.map(\.job) + jobs[(index + 1)...], error, reading: reading)
                }
            }
        }
        var chainMark: AuditChain.Mark?
        var written = 0
        do {
            // The kept notes, chained, in the same transaction as what they record; a reading
            // batch's kept apart after it (``AuditTrail/appendReads(_:store:)``).
            if !noted.isEmpty, let trail, !reading {
                try trail.settle(store)
                chainMark = trail.chain.mark
                let blocks = trail.chain.seal(noted.flatMap(\.drafts))
                try store.appendAuditBlocks(blocks)
                written = blocks.count
            }
            try store.commit()
            if !noted.isEmpty, let trail, reading { try trail.appendReads(noted.flatMap(\.drafts), store: store) }
        } catch {
            noteFull(error)
            store.rollback()
            // Committed or not, the store says which at the next write.
            if let chainMark { trail?.unsure = chainMark }
            if retryOnConflict && Self.isConflict(error) { return .conflicted(at: nil) }
            for f in failed { f.job.fail(f.error) }
            return abandon(committed.map(\.job), error, reading: reading)
        }
        trail?.wrote(written)
        for note in noted { note.subject.noted(note.drafts, stored: trail != nil) }
        noted.removeAll(keepingCapacity: true)
        for c in committed { c.deliver() }
        for f in failed { f.job.fail(f.error) }
        return .answered
    }

    /// A transaction the store gave up (or whose commit failed): `jobs` are unanswered; the
    /// writes fail with `error`, and the reads of a writing transaction are handed back to run
    /// again on their own.
    private func abandon(_ jobs: [Job], _ error: any Error, reading: Bool) -> Ending {
        var reads: [Job] = []
        for job in jobs {
            if job.reads && !reading { reads.append(job) } else { job.fail(error) }
        }
        return reads.isEmpty ? .answered : .abandoned(reads: reads)
    }

    /// Whether a job of a writing transaction runs in a savepoint: unless it writes nothing but
    /// its notes (nothing to undo), on a store where a failed statement leaves the transaction
    /// usable.
    private func needsSavepoint(_ job: Job) -> Bool {
        !job.sendsNothing && (!job.notesOnly || store.failedStatementAbortsTransaction)
    }

    /// Runs one job, in its savepoint unless the batch only reads or the job writes nothing but
    /// its notes (neither has anything to undo).
    private func run(_ job: Job, reading: Bool) throws -> @Sendable () -> Void {
        if reading {
            // An audited read's notes, for the segment (only such a batch reads with notes).
            guard job.notesOnly, let subject = job.audit else { return try job.body(store) }
            let notes = JobNotes(subject: subject)
            let deliver = try VaultAuditing.running.withValue(notes) { try job.body(store) }
            if !notes.drafts.isEmpty { noted.append((subject, notes.drafts)) }
            return deliver
        }
        let undoable = needsSavepoint(job)
        if undoable { try store.savepoint() }
        guard let subject = job.audit else {
            let deliver = try job.body(store)
            if undoable { try store.releaseSavepoint() }
            return deliver
        }
        let notes = JobNotes(subject: subject)
        let deliver = try VaultAuditing.running.withValue(notes) { try job.body(store) }
        if undoable { try store.releaseSavepoint() }
        if !notes.drafts.isEmpty { noted.append((subject, notes.drafts)) }
        return deliver
    }
}

/// A store whose statements can wait on rows another writer holds (a database server that
/// nodes share). The executor bounds those waits below `vault.store_timeout_ms`: a wait past
/// the bound fails its statement with ``StoreError/transient(_:)``, as a deadlock does.
protocol LockWaitBounded: AnyObject {
    /// Every later statement waits at most `milliseconds` for a lock another session holds.
    func boundLockWaits(milliseconds: Int)
}
