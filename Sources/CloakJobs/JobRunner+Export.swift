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
        let opened: ExportSteps.Opened
        switch read {
        case let .success((summary, approval)): opened = .found(summary, approval)
        case let .failure(error):
            if error is ImportIntake.Refused || error is CryptoError {
                opened = .altered
            } else {
                dependencies.logger.warning("jobs: cannot read the store", metadata: ["reason": "\(error)"])
                opened = .unavailable
            }
        }
        var steps = ExportSteps(spec: spec, approvalTTLSeconds: dependencies.configuration.jobs.approvalTTLSeconds)
        let checks = ExportSteps.Checks(
            mayExport: mayExport(job, spec), belowDiskReserve: dependencies.belowDiskReserve())
        switch steps.opened(opened, checks, now: Self.now) {
        case .count: count(job, spec, seal: seal)
        case let .write(summary, approval): write(job, spec, seal: seal, summary: summary, approval: approval, steps)
        case .requeue: requeue(job)
        case let .end(state, failure): end(job, state, failure: failure)
        case .goOn, .finish: end(job, .failed, failure: "the job's runner lost its place (opened)")
        }
    }

    /// Gives the job back after a store error, a second later (the runner would take it again
    /// at once otherwise, and read the store in a loop).
    private func requeue(_ job: StoredJob) {
        Thread.sleep(forTimeInterval: 1)
        end(job, .queued, failure: nil)
    }

    /// The token `job` runs for still holds `jobs:export` and `aliases:reveal`, as the person who
    /// asked.
    func mayExport(_ job: StoredJob, _ spec: ExportSpec) -> Bool {
        guard let caller = dependencies.caller(job.owner) else { return false }
        return caller.mayExport && caller.person == spec.person
    }

    /// Why a walk over the selection stopped.
    package enum Walk: Error {
        case stopped
        case lost
        case failed(String)
    }

    /// Each page of the selection, in order, to `page` (values opened when `open`); the digest
    /// of what was walked.
    func walk(
        _ job: StoredJob, _ spec: ExportSpec, seal: JobSeal, filter: ExportFilter, open: Bool, renews: Bool,
        page: (ExportPage) throws -> Void
    ) throws -> String {
        var digest = Digest.sha256(JSONWriter.encode(spec.selectionJSON) + Array("\n\(filter.asOf)".utf8))
        var lease = freshLease()
        let vault = dependencies.vault
        let reads = ExportReads(self)
        func check() throws {
            if stopping.load(ordering: .relaxed) { throw Walk.stopped }
            guard !renews || renew(job, job.progress, lease: &lease) != false else { throw Walk.lost }
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
        return Hex.string(digest)
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

    func ended(_ job: StoredJob, _ walk: Walk) {
        switch walk {
        case .stopped: end(job, .queued, failure: nil)
        case .lost: dependencies.logger.info("jobs: the job is no longer this node's", metadata: ["job": "\(job.id)"])
        case let .failed(reason): end(job, .failed, failure: reason)
        }
    }
}
