import CloakCore
import CloakCrypto
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
final class JobRunner: Sendable {
    struct Dependencies: Sendable {
        let vault: Vault
        /// The configuration the node started with; ``configuration`` is the one it serves now.
        let started: ServiceConfiguration
        /// The configuration the node serves now (a reload's, review V, item 10: a form reloaded
        /// by SIGHUP was served over HTTP while the runner still failed its import for "no
        /// form"); nil: the one it started with.
        var serving: (@Sendable () -> ServiceConfiguration)? = nil
        var configuration: ServiceConfiguration { serving?() ?? started }
        /// The token a job runs for, by id (nil: gone, revoked or expired).
        let token: @Sendable (String) -> ServiceConfiguration.AccessToken?
        /// The guess limits of a job's token (``CreateAdmission``, without the request rate:
        /// `limits.import_rows_per_hour` is an import's rate).
        let admission: @Sendable (ServiceConfiguration.AccessToken) -> CreateAdmission?
        let today: @Sendable () -> CalendarDate
        let logger: Logger
        /// Whether the store's disk is below `limits.disk_reserve_mib` (``DiskReserve``): jobs
        /// then wait rather than take the room kept for reveals and their audit.
        var belowDiskReserve: @Sendable () -> Bool = { false }
    }

    let dependencies: Dependencies
    /// This process's name for its leases.
    let holder: String
    let stopping = Atomic<Bool>(false)
    /// Signalled by ``stop()`` (wakes the idle wait) and by the thread when it has ended.
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
        holder = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.prefix(8))"
    }

    func start() {
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
    func stop() {
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
            AuditLog(logger: dependencies.logger).record(entries, level: .info)
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
        AuditLog(logger: dependencies.logger, vault: dependencies.vault).record(
            AuditEvent.Draft(
                made: .jobEnd, tokenID: job.owner, client: "job", result: Self.auditResult(state),
                facts: facts), level: .info)
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
        if job.kind == .export { return runExport(job) }
        guard let spec = ImportSpec(stored: job.spec) else {
            return end(job, .failed, failure: "the job's description does not read (written by another version?)")
        }
        let plan: ImportPlan
        do { plan = try ImportPlan(spec, configuration: dependencies.configuration) } catch {
            // Not the job's fault: it waits, cancelled with its input kept, for a configuration
            // that takes it (review V, item 10), and `cloak jobs resume` goes on from its cursor.
            return end(
                job, .cancelled,
                failure: "the job cannot run with this configuration: \(error.message); fix it (cloak reload), "
                    + "then cloak jobs resume \(job.id.text)")
        }
        guard let token = mayImport(job) else {
            return end(
                job, .failed,
                failure: "the job's token no longer holds jobs:import and aliases:create (revoked, expired or changed)")
        }
        let seal: JobSeal
        do { seal = try dependencies.vault.jobSeal(job) } catch {
            return end(job, .failed, failure: "\(error)")
        }
        var input = InputCursor(job: job, seal: seal, plan: plan)
        let admission = dependencies.admission(token)
        // A batch at most half of what the rate allows in a lease: the lease, renewed by each
        // commit, never lapses while the runner waits for the rate.
        let perHour = dependencies.configuration.limits.importRowsPerHour
        let batchRows = max(
            1, min(ImportBatch.maxRows, perHour / 3600 * dependencies.configuration.jobs.leaseSeconds / 2))
        var rate = RowRate(perHour: perHour, batch: batchRows)
        var progress = job.progress
        var failures = 0
        // Waiting for room in the guess windows since the last commit (logged once a stretch).
        var waiting = false
        let vault = dependencies.vault
        // The batch the vault commits now, and the one made meanwhile.
        var next: (batch: ImportBatch, rows: Int)?
        var waitingForDisk = false
        while true {
            if stopping.load(ordering: .relaxed) { return end(job, .queued, failure: nil) }
            // Below the disk reserve the job waits, its lease kept (review V, item 4).
            if dependencies.belowDiskReserve() {
                guard
                    wait(
                        job, progress, seconds: 5,
                        first: waitingForDisk
                            ? nil : "jobs: waiting for the store's disk to rise above limits.disk_reserve_mib")
                else { return }
                waitingForDisk = true
                continue
            }
            waitingForDisk = false
            let current: (batch: ImportBatch, rows: Int)
            if let made = next {
                current = made
                next = nil
            } else {
                switch make(&input, rows: batchRows, plan: plan, admission: admission, rate: &rate) {
                case let .made(batch, rows): current = (batch, rows)
                case .stopped: return end(job, .queued, failure: nil)
                case let .failed(reason): return end(job, .failed, failure: reason)
                case .retry:
                    Thread.sleep(forTimeInterval: 1)
                    continue
                case let .full(seconds):
                    guard
                        wait(
                            job, progress, seconds: seconds,
                            first: waiting
                                ? nil
                                : "jobs: waiting for room in the token's guess windows (a million distinct values an hour, or limits.guess_memory_mib)"
                        )
                    else { return }
                    waiting = true
                    continue
                }
            }
            // The token is asked again for every batch: one revoked meanwhile stops its job.
            guard mayImport(job) != nil else {
                return end(job, .failed, failure: "the job's token was revoked or changed while the job ran")
            }
            let now = Self.now
            let step = ImportStep(
                job: job.id, holder: holder, from: progress,
                leaseUntil: now + Int64(dependencies.configuration.jobs.leaseSeconds),
                expiresAt: now + Int64(dependencies.configuration.jobs.outputTTLSeconds), seal: seal)
            let committed = ThreadWait<Result<JobProgress, VaultError>> { done in
                vault.importBatch(current.batch, step: step, now: { Self.now }, completion: done)
            }
            // The next batch is read, checked and sealed while this one commits (on an
            // embedded store; on a server, once it has).
            var aheadFailure: String?
            if preparesAhead, !current.batch.isLast, !stopping.load(ordering: .relaxed) {
                switch make(&input, rows: batchRows, plan: plan, admission: admission, rate: &rate) {
                case let .made(batch, rows): next = (batch, rows)
                case let .failed(reason): aheadFailure = reason
                case .stopped, .retry, .full: break
                }
            }
            var result = committed.wait()
            if case .failure = result {
                // A batch answered past vault.store_timeout_ms may still have committed, and a
                // retry of it then finds the cursor moved: the job's row says which it was.
                result = settled(job.id, from: progress, rows: current.rows) ?? result
            }
            switch result {
            case let .success(moved):
                failures = 0
                waiting = false
                progress = moved
                input.committed(current.rows)
                // What the input holds after this batch cannot be read: the job ends here.
                if let aheadFailure { return end(job, .failed, failure: aheadFailure) }
                if current.batch.isLast {
                    recordEnd(job, .done, progress: moved)
                    drop(job.id)
                    dependencies.logger.info(
                        "jobs: job ended",
                        metadata: [
                            "job": "\(job.id)", "state": "done", "imported": "\(moved.imported)",
                            "refused": "\(moved.refused)",
                        ])
                    return
                }
            case .failure(.notFound):
                dependencies.logger.info(
                    "jobs: the job is no longer this node's (cancelled or taken over)", metadata: ["job": "\(job.id)"])
                return
            case let .failure(error):
                // The batch wrote nothing: the same rows again, from the same cursor (and the
                // one made ahead after them), a few times; a batch that fails each time (a store
                // that refuses its rows, a row altered under it) fails the job, not the node.
                failures += 1
                dependencies.logger.warning(
                    "jobs: a batch failed",
                    metadata: ["job": "\(job.id)", "reason": "\(error)", "attempt": "\(failures)"])
                if failures >= Self.attempts {
                    return end(job, .failed, failure: "a batch failed \(failures) times; the last time: \(error)")
                }
                if let ahead = next {
                    next = nil
                    input.unread(ahead.rows)
                }
                input.unread(current.rows)
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    /// Times one batch is tried before its job fails.
    static let attempts = 10

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

    /// The token's guess windows (or the node's budget for them) have no room for the next row:
    /// waits up to `seconds` (at most a minute at a time, then the row is tried again), keeping
    /// the lease. False when the job is no longer this node's or the node stops (the job is
    /// then given back).
    /// Waits up to `seconds` with the job's lease kept, logging `first` (the first wait of a
    /// stretch); false when the job ended meanwhile (stopped, revoked, no longer this node's).
    private func wait(_ job: StoredJob, _ progress: JobProgress, seconds: Int, first: Logger.Message?) -> Bool {
        if let first {
            dependencies.logger.info(first, metadata: ["job": "\(job.id)", "seconds": "\(seconds)"])
        }
        // Renewed at once, then every third of a lease: the lease is kept however short or
        // long the waits (a wait of a second, over and over, never renewed it otherwise).
        var renewed = Date.distantPast
        let until = Date().addingTimeInterval(Double(min(max(seconds, Self.shortestWait), 60)))
        while true {
            if stopping.load(ordering: .relaxed) {
                end(job, .queued, failure: nil)
                return false
            }
            // The token is asked again as for every batch: one revoked meanwhile stops its job.
            guard mayImport(job) != nil else {
                end(job, .failed, failure: "the job's token was revoked or changed while the job ran")
                return false
            }
            // A store that did not answer is asked again at the next turn; only a job that is
            // no longer this node's ends the wait.
            if renew(job, progress, last: &renewed) == false {
                dependencies.logger.info(
                    "jobs: the job is no longer this node's (cancelled or taken over)", metadata: ["job": "\(job.id)"])
                return false
            }
            if Date() >= until { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// The shortest wait for room, in seconds (the limiter's estimate may be a second).
    static let shortestWait = 5

    /// The token `job` runs for, while it may still import (both scopes: an import creates
    /// aliases); nil otherwise.
    private func mayImport(_ job: StoredJob) -> ServiceConfiguration.AccessToken? {
        guard let token = dependencies.token(job.owner), token.scopes.contains(.jobsImport),
            token.scopes.contains(.aliasesCreate)
        else { return nil }
        return token
    }

    /// What became of a batch whose answer was a failure, from the job's row: committed (the
    /// holder is still this node and the cursor moved by the batch's rows), or not (nil: the
    /// failure stands; a job taken over or cancelled is then found so by the retry).
    private func settled(_ id: JobID, from: JobProgress, rows: Int) -> Result<JobProgress, VaultError>? {
        let holder = self.holder
        guard case let .success(job?) = withStore(reads: true, { store in try store.job(id) }) else { return nil }
        let moved = job.progress.cursor == from.cursor + Int64(rows)
        // The last batch ends the job and drops its lease with it.
        if job.state == .done { return moved ? .success(job.progress) : .failure(.notFound) }
        guard job.state == .running, job.lease?.holder == holder else { return .failure(.notFound) }
        return moved ? .success(job.progress) : nil
    }

    private enum Made {
        case made(ImportBatch, rows: Int)
        case stopped
        case failed(String)
        case retry
        /// The first row found no room in the token's guess windows: wait this many seconds.
        case full(Int)
    }

    /// The next batch: up to ``ImportBatch/maxRows`` rows read from `input`, checked, admitted
    /// under the token's guess limits, at the import's rate, and prepared for the vault.
    private func make(
        _ input: inout InputCursor, rows limit: Int, plan: ImportPlan, admission: CreateAdmission?,
        rate: inout RowRate
    ) -> Made {
        let items: [ImportReader.Item]
        let isLast: Bool
        do {
            (items, isLast) = try input.next(limit) { [self] id, from in
                withStore(reads: true) { store in try store.jobChunks(id, part: .input, from: from, limit: 4) }
            }
        } catch let fatal as ImportReader.Fatal {
            return .failed(fatal.description)
        } catch {
            dependencies.logger.warning("jobs: cannot read the input", metadata: ["reason": "\(error)"])
            return .retry
        }
        rate.take(items.count) { stopping.load(ordering: .relaxed) }
        if stopping.load(ordering: .relaxed) {
            input.unread(items.count)
            return .stopped
        }
        let today = dependencies.today()
        let vault = dependencies.vault
        var rows: [ImportRow] = []
        rows.reserveCapacity(items.count)
        for item in items {
            var row: ImportRow
            switch item.values {
            case let .failure(refusal):
                let id = item.id.flatMap { $0.utf8.count <= ImportLines.maxIDBytes ? $0 : nil }
                row = ImportRow(line: item.line, id: id, outcome: .failure(refusal))
            case let .success(values): row = plan.row(values, line: item.line, today: today)
            }
            // The token's guess limits, as its creates pass them; no room for the row's values
            // (the token's cap, the node's budget) ends the batch before it: the job waits.
            if case let .success(values) = row.outcome, let admission {
                switch admission.admitRow(values.map(\.request), vault: vault) {
                case .admitted: break
                case let .refused(refusal):
                    row.outcome = .failure(
                        ImportRefusal(code: CloakError.Code.tooManyRequests.rawValue, reason: refusal.description))
                case let .full(seconds):
                    input.unread(items.count - rows.count)
                    if rows.isEmpty { return .full(seconds) }
                    return made(rows, isLast: false, input: &input)
                }
            }
            rows.append(row)
        }
        return made(rows, isLast: isLast, input: &input)
    }

    /// `rows` prepared as a batch (given back to `input` when they cannot be sealed).
    private func made(_ rows: [ImportRow], isLast: Bool, input: inout InputCursor) -> Made {
        let vault = dependencies.vault
        do { return .made(try vault.prepareImport(rows, isLast: isLast), rows: rows.count) } catch {
            // Given back: the next batch starts with them again.
            input.unread(rows.count)
            dependencies.logger.warning("jobs: cannot seal a batch", metadata: ["reason": "\(error)"])
            return .retry
        }
    }
}

/// Where a running job is in its input: the chunks read, the rows not yet committed, and the
/// rows to skip (those before the job's cursor, committed by whoever ran it before).
struct InputCursor {
    private let job: StoredJob
    private let seal: JobSeal
    private var reader: ImportReader
    private var skip: Int64
    private var chunk = 0
    private var ended = false
    private var pending: [ImportReader.Item] = []
    /// Rows of `pending` given out and not yet committed.
    private var given = 0

    init(job: StoredJob, seal: JobSeal, plan: ImportPlan) {
        self.job = job
        self.seal = seal
        reader = ImportReader(plan: plan)
        skip = job.progress.cursor
    }

    /// Up to `limit` rows not given yet, and whether they are the input's last.
    mutating func next(
        _ limit: Int, read: (JobID, Int) -> Result<[[UInt8]], any Error>
    ) throws -> (items: [ImportReader.Item], isLast: Bool) {
        while pending.count - given < limit && !ended {
            let chunks = try read(job.id, chunk).get()
            guard !chunks.isEmpty else {
                throw ImportReader.Fatal(
                    description: "the job's input ends before its last part (cut short in the store)")
            }
            for sealed in chunks where !ended {
                let opened: (bytes: [UInt8], isLast: Bool)
                do { opened = try seal.open(sealed, part: JobPart.input.rawValue, index: chunk) } catch {
                    throw ImportReader.Fatal(
                        description: "the job's input does not open with its key (altered in the store)")
                }
                chunk += 1
                var items = try reader.feed(opened.bytes)
                if opened.isLast {
                    items += try reader.finish()
                    ended = true
                }
                for item in items {
                    if skip > 0 {
                        skip -= 1
                    } else {
                        pending.append(item)
                    }
                }
            }
        }
        let take = Array(pending[given...].prefix(limit))
        given += take.count
        return (take, ended && given == pending.count)
    }

    /// The first `count` rows given are committed: they are not kept any more.
    mutating func committed(_ count: Int) {
        pending.removeFirst(count)
        given -= count
    }

    /// The last `count` rows given are to be given again (their batch did not commit).
    mutating func unread(_ count: Int) { given -= count }
}

/// `limits.import_rows_per_hour` as a token bucket that holds a second of the rate (at least a
/// batch), and starts with one batch (a node that takes a job over starts with that, not more).
/// A bucket of one batch lost what a stall left unused: a slow commit, a checkpoint, the nice-10
/// thread's sleep overrunning by more than a batch's time (25.6 ms at the default rate). A
/// million rows at the default ten thousand a second took 120 s rather than the rate's 100;
/// a bucket of a second's rows makes a stall up. Over any span, at most a second's rows more
/// than the rate go (so up to twice the rate in the one second after a stall of a second).
struct RowRate {
    private let perSecond: Double
    private var tokens: Double
    private var last = DispatchTime.now().uptimeNanoseconds

    private let burst: Double

    init(perHour: Int, batch: Int) {
        perSecond = Double(perHour) / 3600
        burst = max(Double(batch), perSecond.rounded(.down))
        tokens = Double(batch)
    }

    /// Waits until `count` rows may go (in steps, so a stop is seen within a tenth of a second).
    mutating func take(_ count: Int, stop: () -> Bool) {
        while !stop() {
            let now = DispatchTime.now().uptimeNanoseconds
            tokens = min(burst, tokens + Double(now - last) / 1e9 * perSecond)
            last = now
            if tokens >= Double(count) {
                tokens -= Double(count)
                return
            }
            Thread.sleep(forTimeInterval: min(0.1, (Double(count) - tokens) / perSecond))
        }
    }
}
