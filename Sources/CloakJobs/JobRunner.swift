import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Logging
import Synchronization

/// Runs the store's import jobs on this node (issue 60), one at a time, on a thread of its own
/// at a lower priority than the loops (never a loop, never the vault thread: a node importing
/// keeps answering first): every second it asks the store for a job no live node holds
/// (``JobStore/claimJob(holder:now:until:)``), then reads the job's input from its cursor,
/// checks each row with the job's ``ImportPlan`` and the importing token's guess limits, and
/// hands batches to the vault (``Vault/importBatch(_:step:now:completion:)``), each committing
/// its records, outputs and the new cursor together and renewing the lease. On an embedded
/// store the next batch is read and sealed while the vault commits the one before; on a
/// database server, after it (``preparesAhead``).
///
/// A node killed mid-job leaves the lease to lapse; one that stops is told to, and gives the
/// job back at once. A batch that finds the job no longer its own (cancelled, taken over after
/// a stall) wrote nothing, and the runner lets the job go.
package final class JobRunner: Sendable {
    package struct Dependencies: Sendable {
        let vault: Vault
        /// The configuration the node serves now (a reload's, review V, item 10: a form reloaded
        /// by SIGHUP was served over HTTP while the runner still failed its import for "no
        /// form"), asked for each job and batch.
        let serving: @Sendable () -> JobConfiguration
        var configuration: JobConfiguration { serving() }
        /// The token a job runs for, by id (nil: gone, revoked or expired).
        let caller: @Sendable (String) -> JobCaller?
        let today: @Sendable () -> CalendarDate
        let audit: JobAudit
        let logger: Logger
        /// Whether the store's disk is below `limits.disk_reserve_mib`: jobs then wait rather
        /// than take the room kept for reveals and their audit.
        let belowDiskReserve: @Sendable () -> Bool

        package init(
            vault: Vault, serving: @escaping @Sendable () -> JobConfiguration,
            caller: @escaping @Sendable (String) -> JobCaller?,
            today: @escaping @Sendable () -> CalendarDate, audit: JobAudit, logger: Logger,
            belowDiskReserve: @escaping @Sendable () -> Bool = { false }
        ) {
            self.vault = vault
            self.serving = serving
            self.caller = caller
            self.today = today
            self.audit = audit
            self.logger = logger
            self.belowDiskReserve = belowDiskReserve
        }
    }

    let dependencies: Dependencies
    /// This process's name for its leases.
    let holder: String
    let stopping = Atomic<Bool>(false)
    /// Signalled by ``stop()`` (wakes the idle wait) and by the thread when it has ended.
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    package init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
        holder = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.prefix(8))"
    }

    package func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        // GnuPG homes of exports a kill cut short (their process is gone).
        for home in OpenPGPEncryption.removeStaleHomes() {
            dependencies.logger.info(
                "jobs: removed a GnuPG home left by a stopped export", metadata: ["home": "\(home)"])
        }
        let thread = Thread { [self] in
            ThreadNiceness.lower()
            var swept = 0.0
            while !stopping.load(ordering: .relaxed) {
                if let job = claim() {
                    run(job)
                } else {
                    // Ended jobs past jobs.output_ttl_s, and inputs nobody finished sending.
                    if Date().timeIntervalSince1970 - swept >= Self.sweepSeconds {
                        sweep()
                        swept = Date().timeIntervalSince1970
                    }
                    _ = wake.wait(timeout: .now() + 1)
                }
            }
            ended.signal()
        }
        thread.name = "cloak-jobs"
        thread.start()
    }

    /// Stops taking jobs, lets the batch under way finish, and gives its job back.
    package func stop() {
        stopping.store(true, ordering: .relaxed)
        guard started.load(ordering: .relaxed) else { return }
        wake.signal()
        ended.wait()
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// How often an idle runner deletes expired jobs.
    static let sweepSeconds = 60.0

    /// Deletes jobs that ended more than `jobs.output_ttl_s` ago and jobs still receiving their
    /// input after `jobs`' receiving limit (a client or node that went away mid-file), with their
    /// chunks, and the inputs jobs done or failed left behind.
    private func sweep() {
        let now = Self.now
        let idleBefore = now - Int64(dependencies.configuration.jobs.receivingIdleSeconds)
        // A slice of chunks a transaction (the vault thread serves requests between them), at
        // most 2 GiB of them a sweep.
        var total = 0
        for _ in 0..<2_048 {
            let result = withStore { store in
                try store.deleteExpiredJobs(now: now, idleBefore: idleBefore, limit: jobChunksPerDelete)
            }
            guard case let .success(deleted) = result else { break }
            total += deleted
            if deleted < jobChunksPerDelete { break }
        }
        if total > 0 {
            dependencies.logger.info("jobs: expired jobs and ended inputs deleted", metadata: ["rows": "\(total)"])
        }
    }

    /// Drops an ended job's `part` chunks (its input; a failed export's partial file), a slice
    /// a transaction (``jobChunksPerDelete``), so that the vault thread serves requests between
    /// slices and SQLite never holds a whole input's pages. What a failure leaves, the sweep
    /// deletes (``JobStore/deleteExpiredJobs``).
    func drop(_ id: JobID, _ part: JobPart = .input) {
        while case .success(jobChunksPerDelete) = withStore({ store in
            try store.deleteJobChunks(id, part: part, limit: jobChunksPerDelete)
        }) {}
    }

    /// Runs `body` with the store on the vault's thread, and waits for it.
    func withStore<T: Sendable>(
        reads: Bool = false, recording entries: [AuditEvent.Draft] = [], _ body: @escaping (any AliasStore) throws -> T
    ) -> Result<T, any Error> {
        let result = ThreadWait<Result<T, any Error>>.answer { completion in
            if entries.isEmpty {
                dependencies.vault.withStore(reads: reads, body, completion: completion)
            } else {
                dependencies.vault.withStore(recording: entries, body, completion: completion)
            }
        }
        if case .success = result, !entries.isEmpty {
            // Stored with the change: the lines only.
            dependencies.audit.written(entries)
        }
        return result
    }

    private func claim() -> StoredJob? {
        let now = Self.now
        let until = now + Int64(dependencies.configuration.jobs.leaseSeconds)
        let holder = self.holder
        switch withStore({ store in try store.claimJob(holder: holder, now: now, until: until) }) {
        case let .success(job): return job
        case let .failure(error):
            dependencies.logger.warning("jobs: cannot ask the store for a job", metadata: ["reason": "\(error)"])
            return nil
        }
    }

    /// A job's end as its audit event's result: done is `ok`, a cancel `cancelled`, and any
    /// other end `failed`.
    static func auditResult(_ state: JobState) -> AuditResult {
        switch state {
        case .done: .ok
        case .cancelled: .cancelled
        default: .failed
        }
    }

    /// A job's end as an audit event (`job_end`, review V, item 6): its kind and state, what it
    /// read, imported or exported and refused, and why it failed (scrubbed: caller text). The
    /// counts are the store's (nil `progress`: read them again), never a value.
    func recordEnd(_ job: StoredJob, _ state: JobState, progress: JobProgress? = nil, failure: String? = nil) {
        let counts =
            progress
            ?? {
                if case let .success(found?) = withStore(reads: true, { store in try store.job(job.id) }) {
                    return found.progress
                }
                return job.progress
            }()
        var facts: [(key: String, value: String)] = [
            ("job", job.id.text), ("kind", job.kind.rawValue), ("state", state.rawValue),
        ]
        if job.kind == .export {
            facts += [
                ("rows", "\(counts.imported)"), ("missing", "\(counts.refused)"), ("exported", "\(counts.cursor)"),
            ]
        } else {
            facts += [
                ("rows_read", "\(counts.cursor)"), ("imported", "\(counts.imported)"), ("refused", "\(counts.refused)"),
            ]
        }
        if let failure { facts.append(("reason", failure)) }
        dependencies.audit.record(
            AuditEvent.Draft(
                made: .jobEnd, tokenID: job.owner, client: "job", result: Self.auditResult(state), facts: facts))
    }

    func end(_ job: StoredJob, _ state: JobState, failure: String?) {
        let now = Self.now
        let expires = now + Int64(dependencies.configuration.jobs.outputTTLSeconds)
        let holder = self.holder
        let result = withStore { store -> Bool in
            let ended = try store.setJobState(
                job.id, from: [.running], to: state, holder: holder, now: now,
                expiresAt: state == .queued ? nil : expires,
                failure: failure)
            return ended
        }
        if case .success(true) = result, state.isFinal {
            recordEnd(job, state, failure: failure)
            // A cancelled job keeps its input: it can be resumed.
            if state != .cancelled { drop(job.id) }
            // A failed export's chunks hold a part of its rows, decryptable by its recipient:
            // they go at once (review V, item 3), never handed out by the API or the CLI.
            if job.kind == .export && state == .failed { drop(job.id, .export) }
        }
        var metadata: Logger.Metadata = ["job": "\(job.id)", "state": "\(state.rawValue)"]
        if let failure { metadata["reason"] = "\(failure)" }
        if case .failure(let error) = result { metadata["store"] = "\(error)" }
        dependencies.logger.info("jobs: job ended", metadata: metadata)
    }

    private func run(_ job: StoredJob) {
        dependencies.logger.info(
            "jobs: running",
            metadata: ["job": "\(job.id)", "kind": "\(job.kind.rawValue)", "cursor": "\(job.progress.cursor)"])
        switch job.kind {
        case .export: runExport(job)
        case .import: runImport(job)
        }
    }

    /// Whether a job's work overlaps itself: the next import batch prepared while the vault
    /// commits the one before, an export's next page read while GnuPG encrypts the one before.
    /// Only on an embedded store. There a batch's commit is the vault thread's work, and a
    /// loop thread woken for a request takes the core from it at once (the loops ask for a
    /// short slice). On a database server the commit is the server's backends' work, in a
    /// scheduling group of their own at the server's priority, which Cloak cannot lower; with
    /// a server on the node's own cores, the overlap kept both cores busy and a request woken
    /// beside it waited for the backend's slice or a whole 4 ms tick. Without it the job takes
    /// about one core (`Benchmarks/import.sh`, 300,000 rows on PostgreSQL: `/validate` p99 x0.91
    /// and x0.97 of idle against x1.25 to x5.50 in seven runs with it; 34.7 s against 32.5 s).
    var preparesAhead: Bool { dependencies.vault.storeIsEmbedded }
}
