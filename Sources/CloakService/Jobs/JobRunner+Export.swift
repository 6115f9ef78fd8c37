import CloakCore
import CloakCrypto
import CloakVault
import Dispatch
import Foundation
import Logging
import Synchronization

/// Export jobs on the runner's thread (issue 60). An export runs twice: once to count its
/// selection (the count and its digest sealed as the job's ``JobPart/selection`` chunk; the job
/// then awaits approval for `jobs.approval_ttl_s`), and, once another person approved it, to
/// write it: records read a page at a time, each page's values opened on the vault's thread and
/// handed to GnuPG as lines, GnuPG's message sealed into the job's ``JobPart/export`` chunks as
/// it comes, each chunk committed with the lease. The plaintext is in memory a page at a time
/// and in GnuPG's pipe, never in a file.
///
/// An OpenPGP message cannot be resumed midway: a node that takes over a running export writes
/// it again from its first chunk, over what the node before wrote.
extension JobRunner {
    /// Records a page (aliases a page of a list).
    static let exportPage = 500

    func runExport(_ job: StoredJob) {
        guard let spec = ExportSpec(stored: job.spec) else {
            return end(job, .failed, failure: "the job's description does not read (written by another version?)")
        }
        guard mayExport(job, spec) else {
            return end(
                job, .failed,
                failure: "the job's token no longer holds jobs:export and aliases:reveal as the same person")
        }
        let seal: JobSeal
        do { seal = try dependencies.vault.jobSeal(job) } catch {
            return end(job, .failed, failure: "\(error)")
        }
        let read = withStore(reads: true) { store -> (ExportSummary?, ExportApproval?) in
            (
                try ExportSummary.read(job, seal: seal, store: store),
                try ExportApproval.read(job, seal: seal, store: store)
            )
        }
        let summary: ExportSummary?
        let approval: ExportApproval?
        switch read {
        case let .success(found): (summary, approval) = found
        case let .failure(error):
            if error is ImportIntake.Refused || error is CryptoError {
                return end(
                    job, .failed, failure: "the job's selection or approval does not open (altered in the store)")
            }
            dependencies.logger.warning("jobs: cannot read the store", metadata: ["reason": "\(error)"])
            return requeue(job)
        }
        guard let approval, let summary else { return count(job, spec, seal: seal) }
        // What was approved is what was counted, to this recipient, by another person, lately.
        guard approval.rows == summary.rows, approval.digest == summary.digest,
            approval.fingerprint == spec.fingerprint, approval.person != spec.person
        else {
            return end(job, .failed, failure: "the job's approval is not for its selection and recipient")
        }
        guard Self.now - approval.at <= Int64(dependencies.configuration.jobs.approvalTTLSeconds) else {
            return end(
                job, .failed, failure: "the job's approval is older than jobs.approval_ttl_s: ask for the export again")
        }
        // An export's file is written into the store: below the disk reserve it waits, queued.
        guard !dependencies.belowDiskReserve() else { return requeue(job) }
        write(job, spec, seal: seal, summary: summary, approval: approval)
    }

    /// Gives the job back after a store error, a second later (the runner would take it again
    /// at once otherwise, and read the store in a loop).
    private func requeue(_ job: StoredJob) {
        Thread.sleep(forTimeInterval: 1)
        end(job, .queued, failure: nil)
    }

    /// The token `job` runs for still holds `jobs:export` and `aliases:reveal`, as the person who
    /// asked.
    private func mayExport(_ job: StoredJob, _ spec: ExportSpec) -> Bool {
        guard let token = dependencies.token(job.owner) else { return false }
        return token.scopes.contains(.jobsExport) && token.scopes.contains(.aliasesReveal)
            && token.person == spec.person
    }

    /// Renews the job's lease (a commit of no progress) when it is due; false once the job is
    /// no longer this node's.
    /// Renews the job's lease when a third of it has passed since `last`: true when renewed
    /// (or not due), false when the job is no longer this node's, nil when the store did not
    /// answer (asked again next time; the lease has two more thirds).
    func renew(_ job: StoredJob, _ progress: JobProgress, last: inout Date) -> Bool? {
        guard Date().timeIntervalSince(last) >= Double(dependencies.configuration.jobs.leaseSeconds) / 3 else {
            return true
        }
        let (holder, until) = (self.holder, Self.now + Int64(dependencies.configuration.jobs.leaseSeconds))
        let result = withStore { store in
            try store.advanceJob(
                job.id, holder: holder, from: progress.cursor, to: progress, leaseUntil: until, outputs: [],
                now: Self.now)
        }
        guard case let .success(renewed) = result else { return nil }
        last = Date()
        return renewed
    }

    /// Why a walk over the selection stopped.
    enum Walk: Error {
        case stopped
        case lost
        case failed(String)
    }

    /// Each page of the selection, in order, to `page` (values opened when `open`); the digest
    /// of what was walked.
    private func walk(
        _ job: StoredJob, _ spec: ExportSpec, seal: JobSeal, filter: ExportFilter, open: Bool, renews: Bool,
        page: (ExportPage) throws -> Void
    ) throws -> String {
        var digest = Digest.sha256(JSONWriter.encode(spec.selectionJSON) + Array("\n\(filter.asOf)".utf8))
        var lease = Date()
        let vault = dependencies.vault
        let reads = ExportReads(self)
        func check() throws {
            if stopping.load(ordering: .relaxed) { throw Walk.stopped }
            guard !renews || renew(job, job.progress, last: &lease) != false else { throw Walk.lost }
        }
        if case .aliases = spec.selection {
            var index = 0
            var carry: [[UInt8]] = []
            var ended = false
            while !ended || !carry.isEmpty {
                try check()
                if !ended && carry.count < Self.exportPage {
                    let at = index
                    guard
                        case let .success(chunks) = reads.read({ store in
                            try store.jobChunks(job.id, part: .input, from: at, limit: 1)
                        })
                    else { throw Walk.failed("the job's list could not be read") }
                    guard let sealed = chunks.first,
                        let opened = try? seal.open(sealed, part: JobPart.input.rawValue, index: at)
                    else { throw Walk.failed("the job's list is cut short or altered in the store") }
                    index += 1
                    ended = opened.isLast
                    carry += opened.bytes.split(separator: 0x0A).map(Array.init)
                    continue
                }
                let aliases = carry.prefix(Self.exportPage).map { String(decoding: $0, as: UTF8.self) }
                carry.removeFirst(aliases.count)
                digest = Digest.sha256(digest + Array(aliases.joined(separator: "\n").utf8))
                let result = reads.read { store in
                    try vault.exportListed(aliases, filter: filter, open: open, in: store)
                }
                guard case let .success(found) = result else { throw Walk.failed("the store could not be read") }
                digest = Self.digest(digest, found, missing: true)
                try page(found)
            }
        } else {
            var after: String?
            repeat {
                try check()
                let from = after
                let result = reads.read { store in
                    try vault.exportPage(after: from, limit: Self.exportPage, filter: filter, open: open, in: store)
                }
                guard case let .success(found) = result else { throw Walk.failed("the store could not be read") }
                digest = Self.digest(digest, found, missing: false)
                try page(found)
                after = found.next
            } while after != nil
        }
        return APICredentials.hex(digest)
    }

    /// The digest so far and a page's rows: which records (by id) under which alias, in order.
    /// Counting and writing fold the same rows, so the write knows whether it is writing the
    /// rows that were counted and approved (a selected record changed or gone since is not).
    /// Only selected rows count, never where a page of the store ends: records stored after the
    /// count, or swept, move the store's page bounds but select nothing (review V, item 2). A
    /// listed selection's pages are the list's own, so their `missing` counts are folded too.
    static func digest(_ digest: [UInt8], _ page: ExportPage, missing: Bool) -> [UInt8] {
        // Folded a row at a time: the same rows give the same digest however the store's pages
        // group them (a record swept, or stored with an earlier id, moves every bound after it).
        var folded = digest
        for row in page.rows {
            folded = Digest.sha256(folded + Array(row.record.utf8) + [0x09] + Array(row.alias.utf8) + [0x0A])
        }
        if missing, page.missing > 0 || !page.rows.isEmpty {
            folded = Digest.sha256(folded + Array("missing \(page.missing)\n".utf8))
        }
        return folded
    }

    /// The second an export's selection is bounded by: the second it was asked for. The count
    /// begins only once every record stamped in or before it is committed: on this node, once
    /// a batch submitted two seconds later has committed (the vault commits in order); another
    /// node's record is missed only if its commit took over a second, and then the write fails
    /// closed (the digest differs) rather than write rows nobody approved.
    private func settle(_ job: StoredJob) throws -> Int64 {
        // Never a second to come (a wrong clock, or a row a database writer changed).
        let asOf = min(job.createdAt, Self.now)
        while Self.now < asOf + 2 {
            if stopping.load(ordering: .relaxed) { throw Walk.stopped }
            Thread.sleep(forTimeInterval: 0.05)
        }
        guard case .success = withStore({ _ in }) else { throw Walk.failed("the store could not be written") }
        return asOf
    }

    /// Counts the selection, seals the count, and leaves the job awaiting approval.
    private func count(_ job: StoredJob, _ spec: ExportSpec, seal: JobSeal) {
        var rows: Int64 = 0
        var missing: Int64 = 0
        let start = job.progress
        let digest: String
        let asOf: Int64
        var groups: ExportSummary.GroupCounts?
        do {
            asOf = try settle(job)
            if spec.layout.isRows {
                let walked = try walkRows(job, spec, filter: spec.filter(asOf: asOf), open: false, renews: true) {
                    page in rows += Int64(page.rows.count)
                }
                (digest, groups) = (walked.digest, walked.counts)
            } else {
                digest = try walk(job, spec, seal: seal, filter: spec.filter(asOf: asOf), open: false, renews: true) {
                    page in
                    rows += Int64(page.rows.count)
                    missing += Int64(page.missing)
                }
            }
        } catch let walk as Walk {
            return ended(job, walk)
        } catch {
            return end(job, .failed, failure: "\(error)")
        }
        let summary = ExportSummary(rows: rows, missing: missing, digest: digest, asOf: asOf, groups: groups)
        let (holder, now) = (self.holder, Self.now)
        let expires = now + Int64(dependencies.configuration.jobs.approvalTTLSeconds)
        let leaseUntil = now + Int64(dependencies.configuration.jobs.leaseSeconds)
        // The event commits with the count it records (review V, item 6).
        let counted = entry(job, spec, .jobExportCounted, summary: summary, approval: nil)
        let result = withStore(recording: [counted]) { store -> Bool in
            let sealed = try seal.seal(summary.encoded, part: JobPart.selection.rawValue, index: 0, isLast: true)
            var progress = JobProgress()
            progress.imported = rows
            progress.refused = missing
            guard
                try store.advanceJob(
                    job.id, holder: holder, from: start.cursor, to: progress,
                    leaseUntil: leaseUntil, outputs: [JobOutputChunk(part: .selection, index: 0, sealed: sealed)],
                    now: now),
                try store.setJobState(
                    job.id, from: [.running], to: .awaitingApproval, holder: holder, now: now, expiresAt: expires,
                    failure: nil)
            else { throw Walk.lost }
            return true
        }
        switch result {
        case .success:
            dependencies.logger.info(
                "jobs: export counted; awaiting approval",
                metadata: ["job": "\(job.id)", "rows": "\(rows)", "missing": "\(missing)"])
        case .failure(Walk.lost):
            dependencies.logger.info("jobs: the job is no longer this node's", metadata: ["job": "\(job.id)"])
        case let .failure(error):
            dependencies.logger.warning("jobs: cannot store the count", metadata: ["reason": "\(error)"])
            requeue(job)
        }
    }

    private func ended(_ job: StoredJob, _ walk: Walk) {
        switch walk {
        case .stopped: end(job, .queued, failure: nil)
        case .lost: dependencies.logger.info("jobs: the job is no longer this node's", metadata: ["job": "\(job.id)"])
        case let .failed(reason): end(job, .failed, failure: reason)
        }
    }

    /// Writes the approved export: lines to GnuPG, GnuPG's message to sealed chunks.
    private func write(
        _ job: StoredJob, _ spec: ExportSpec, seal: JobSeal, summary: ExportSummary, approval: ExportApproval
    ) {
        let encryption: OpenPGPEncryption
        do {
            encryption = try OpenPGPEncryption(publicKey: Array(spec.recipient.utf8))
        } catch {
            return end(job, .failed, failure: "the recipient's key: \(error.description)")
        }
        guard encryption.fingerprint == spec.fingerprint else {
            return end(job, .failed, failure: "the recipient's key is not the one approved")
        }
        let writer = ExportWriter(runner: self, job: job, seal: seal, summary: summary)
        let filter = spec.filter(asOf: summary.asOf)
        // Pages are read on a thread of their own, a page ahead of GnuPG on an embedded store,
        // when GnuPG asks on a server (``preparesAhead``); GnuPG's callbacks (the lines it
        // reads, the message it writes, the lease) all run here, on this thread.
        let queue = ExportPages(ahead: preparesAhead)
        let read = DispatchSemaphore(value: 0)
        let reader = Thread { [self] in
            // As the runner: a page read and opened here waits for the loops, not they for it.
            ThreadNiceness.lower()
            do {
                let digest =
                    spec.layout.isRows
                    ? try walkRows(job, spec, filter: filter, open: true, renews: false) { page in
                        try queue.put(.rows(page))
                    }.digest
                    : try walk(job, spec, seal: seal, filter: filter, open: true, renews: false) { page in
                        try queue.put(.values(page))
                    }
                queue.finish(nil, digest: digest)
            } catch {
                queue.finish(error, digest: nil)
            }
            read.signal()
        }
        reader.name = "cloak-jobs-export"
        reader.start()
        let fields = summary.groups?.fields ?? []
        var pending: [UInt8] = spec.layout.isRows ? spec.rowsHeader(fields: fields) : spec.header
        var rows: Int64 = 0
        do {
            try encryption.encrypt(
                input: { [self] in
                    while pending.isEmpty {
                        // The requester's token is asked again for every page: one revoked, or
                        // given to another person, meanwhile stops the export.
                        guard mayExport(job, spec) else {
                            throw Walk.failed("the job's token was revoked or changed while the export ran")
                        }
                        guard let chunk = try queue.take(tick: { try writer.renewIfDue() }) else {
                            // The rows written must be the rows counted and approved.
                            guard queue.digest == summary.digest else {
                                throw Walk.failed("the selection changed since it was counted and approved")
                            }
                            return nil
                        }
                        rows += Int64(chunk.count)
                        guard rows <= summary.rows else {
                            throw Walk.failed("the selection grew past what was approved")
                        }
                        switch chunk {
                        case let .values(page): for row in page.rows { spec.line(row, into: &pending) }
                        case let .rows(page): for row in page.rows { spec.rowLine(row, fields: fields, into: &pending) }
                        }
                        writer.rowsRead = rows
                    }
                    defer { pending = [] }
                    return pending
                },
                output: { bytes in try writer.append(bytes) })
            // The event commits with the last chunk and the state `done` (review V, item 6).
            try writer.finish(
                recording: entry(job, spec, .jobExportWritten, summary: summary, approval: approval, exported: rows))
        } catch {
            queue.cancel()
            read.wait()
            switch error {
            case let walk as Walk: return ended(job, walk)
            case is JobRunnerLost: return ended(job, .lost)
            default:
                if let walk = queue.failure as? Walk { return ended(job, walk) }
                return end(job, .failed, failure: "the export could not be written: \(error)")
            }
        }
        read.wait()
        dependencies.logger.info(
            "jobs: job ended", metadata: ["job": "\(job.id)", "state": "done", "exported": "\(rows)"])
        recordEnd(job, .done)
    }

    /// The audit event of a step the runner took, stored with the step's own commit.
    func entry(
        _ job: StoredJob, _ spec: ExportSpec, _ action: AuditAction, summary: ExportSummary, approval: ExportApproval?,
        exported: Int64? = nil
    ) -> AuditEvent.Draft {
        var facts: [(key: String, value: String)] = [
            ("job", job.id.text), ("requester", job.owner), ("requester_person", spec.person),
            ("selection_digest", summary.digest), ("rows", "\(summary.rows)"), ("recipient", spec.fingerprint),
        ]
        if let approval {
            facts += [("approver", approval.token), ("approver_person", approval.person)]
        }
        if let exported { facts.append(("exported", "\(exported)")) }
        return AuditEvent.Draft(made: action, tokenID: job.owner, client: "job", result: .ok, facts: facts)
    }
}

/// Pages handed from the thread that reads them to GnuPG's read callback. `ahead`: at most two
/// waiting, so the reader stays a page ahead and no further. Otherwise the reader reads a page
/// only once the callback asks for one (``put(_:)`` returns then): the reader and the callback
/// take turns (the first page is read before any ask, and the `gpg` process may still be
/// working through what it was given).
final class ExportPages: @unchecked Sendable {
    /// A page of either layout.
    enum Chunk {
        case values(ExportPage)
        case rows(ExportGroupPage)

        var count: Int {
            switch self {
            case let .values(page): page.rows.count
            case let .rows(page): page.rows.count
            }
        }

        /// Listed aliases that found nothing (a value layout's).
        var missing: Int {
            if case let .values(page) = self { return page.missing }
            return 0
        }
    }

    private let lock = NSCondition()
    private let ahead: Bool
    private var pages: [Chunk] = []
    /// The callback waits for a page the reader has not read yet (only without `ahead`).
    private var asked = false
    private var done = false
    private var cancelled = false
    private var failed: (any Error)?
    private var walked: String?

    /// The reader's error, once it ended with one.
    var failure: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return failed
    }

    init(ahead: Bool) {
        self.ahead = ahead
    }

    func put(_ page: Chunk) throws {
        lock.lock()
        defer { lock.unlock() }
        while ahead && pages.count >= 2 && !cancelled { lock.wait() }
        if cancelled { throw CancellationError() }
        pages.append(page)
        asked = false
        lock.broadcast()
        // Not ahead: the next page is read when the callback, done with this one, asks.
        while !ahead && !asked && !cancelled { lock.wait() }
        if cancelled { throw CancellationError() }
    }

    /// The digest of the rows the reader read, once it ended without an error.
    var digest: String? {
        lock.lock()
        defer { lock.unlock() }
        return walked
    }

    func finish(_ error: (any Error)?, digest: String?) {
        lock.lock()
        done = true
        failed = error
        walked = digest
        lock.broadcast()
        lock.unlock()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        lock.broadcast()
        lock.unlock()
    }

    /// The next page; nil at the end; the reader's error when it failed. `tick` runs every
    /// second while it waits (the lease is renewed however slow a page is).
    func take(tick: () throws -> Void) throws -> Chunk? {
        lock.lock()
        defer { lock.unlock() }
        while pages.isEmpty && !done {
            if !asked {
                asked = true
                lock.broadcast()
            }
            if !lock.wait(until: Date().addingTimeInterval(1)) {
                lock.unlock()
                defer { lock.lock() }
                try tick()
            }
        }
        if !pages.isEmpty {
            let page = pages.removeFirst()
            lock.broadcast()
            return page
        }
        if let failed { throw failed }
        return nil
    }
}

/// GnuPG's message into the job's sealed chunks, each committed as it fills, with the lease.
/// Used on the runner's thread only (GnuPG's callbacks run there).
final class ExportWriter {
    private let runner: JobRunner
    private let job: StoredJob
    private let seal: JobSeal
    private var buffer: [UInt8] = []
    /// What the store holds (the first commit moves the cursor on from the last run's).
    private var committed: JobProgress
    private var storedCursor: Int64
    private var renewed = Date()
    /// Rows handed to GnuPG so far.
    var rowsRead: Int64 = 0

    init(runner: JobRunner, job: StoredJob, seal: JobSeal, summary: ExportSummary) {
        self.runner = runner
        self.job = job
        self.seal = seal
        storedCursor = job.progress.cursor
        committed = JobProgress(imported: summary.rows, refused: summary.missing)
    }

    func append(_ bytes: [UInt8]) throws {
        buffer += bytes
        while buffer.count >= JobSeal.chunkLimit {
            let chunk = Array(buffer.prefix(JobSeal.chunkLimit))
            buffer.removeFirst(chunk.count)
            try commit(chunk, isLast: false)
        }
    }

    /// The last chunk, the state `done` and `event`, in one commit.
    func finish(recording event: AuditEvent.Draft) throws {
        try commit(buffer, isLast: true, recording: [event])
        buffer = []
    }

    /// A commit of no output when none renewed the lease for a third of it.
    func renewIfDue() throws {
        let lease = runner.dependencies.configuration.jobs.leaseSeconds
        guard Date().timeIntervalSince(renewed) >= Double(lease) / 3 else { return }
        let (job, holder, from, progress) = (self.job, runner.holder, storedCursor, committed)
        let now = JobRunner.now
        let result = runner.withStore { store in
            try store.advanceJob(
                job.id, holder: holder, from: from, to: progress, leaseUntil: now + Int64(lease), outputs: [], now: now)
        }
        guard case .success(true) = result else {
            if case .success(false) = result { throw JobRunnerLost() }
            return
        }
        storedCursor = progress.cursor
        renewed = Date()
    }

    private func commit(_ bytes: [UInt8], isLast: Bool, recording events: [AuditEvent.Draft] = []) throws {
        var next = committed
        let index = next.outputChunks
        next.cursor = rowsRead
        next.outputChunks = index + 1
        next.mappingBytes += Int64(bytes.count)
        let sealed = try seal.seal(bytes, part: JobPart.export.rawValue, index: index, isLast: isLast)
        let (job, holder, jobs, from, moving) = (
            self.job, runner.holder, runner.dependencies.configuration.jobs, storedCursor, next
        )
        let now = JobRunner.now
        // Thrown, not returned: the job no longer this node's, nothing of the commit (the chunk,
        // the event) is kept.
        let result = runner.withStore(recording: events) { store in
            guard
                try store.advanceJob(
                    job.id, holder: holder, from: from, to: moving, leaseUntil: now + Int64(jobs.leaseSeconds),
                    outputs: [JobOutputChunk(part: .export, index: index, sealed: sealed)], now: now)
            else { throw JobRunnerLost() }
            if isLast {
                guard
                    try store.setJobState(
                        job.id, from: [.running], to: .done, holder: holder, now: now,
                        expiresAt: now + Int64(jobs.outputTTLSeconds), failure: nil)
                else { throw JobRunnerLost() }
            }
        }
        switch result {
        case .success: break
        case .failure(let error as JobRunnerLost): throw error
        case .failure: throw ImportIntake.Refused(description: "a chunk of the export could not be stored")
        }
        committed = moving
        storedCursor = moving.cursor
        renewed = Date()
        if isLast { runner.drop(job.id) }
    }
}

/// The job is no longer this node's (cancelled, or taken over after a stall).
struct JobRunnerLost: Error {}

/// An export's reads, on a store connection of the walking thread's own (a thread at nice 10):
/// a million records' pages read and opened there, not on the vault's threads, which answer
/// requests at nice 0 (a SQLite file or a PostgreSQL server, like the audit search's own
/// connection). Where the store cannot be opened twice (an in-memory database), or the second
/// connection fails, the reads go through the vault's executor as any other.
final class ExportReads {
    private let runner: JobRunner
    private var own: (any AliasStore)?

    init(_ runner: JobRunner) {
        self.runner = runner
        let url = runner.dependencies.configuration.vault.store
        if !url.hasSuffix(":memory:") {
            do { own = try VaultBootstrap.store(url: url) } catch {
                runner.dependencies.logger.warning(
                    "jobs: an export reads through the vault (no connection of its own)",
                    metadata: ["reason": "\(error)"])
            }
        }
    }

    func read<T: Sendable>(_ body: @escaping (any AliasStore) throws -> T) -> Result<T, any Error> {
        guard let own else { return runner.withStore(reads: true, body) }
        return Result { try body(own) }
    }
}
