import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Logging
import Synchronization

/// Import jobs on the runner's thread (issue 60): the driver of ``ImportSteps``. The machine
/// says what comes next; here it is done: the input read and checked with the job's
/// ``ImportPlan`` and the importing token's guess limits, batches handed to the vault
/// (``Vault/importBatch(_:step:now:completion:)``, each committing its records, outputs and
/// the new cursor together and renewing the lease), waits kept with the lease.
extension JobRunner {
    /// A batch as the runner made it: the rows prepared for the vault.
    package struct MadeBatch: ImportStepsBatch {
        let batch: ImportBatch
        package let rows: Int
        package var isLast: Bool { batch.isLast }
    }

    package typealias Steps = ImportSteps<MadeBatch>

    /// What a batch needs besides its rows.
    private struct Making {
        let plan: ImportPlan
        let admission: (any ImportAdmission)?
        let rows: Int
        var rate: RowRate
    }

    func runImport(_ job: StoredJob) {
        guard let spec = ImportSpec(stored: job.spec) else {
            return end(job, .failed, failure: "the job's description does not read (written by another version?)")
        }
        let configuration = dependencies.configuration
        let plan: ImportPlan
        do { plan = try ImportPlan(spec, forms: configuration.forms) } catch {
            // Not the job's fault: it waits, cancelled with its input kept, for a configuration
            // that takes it (review V, item 10), and `cloak jobs resume` goes on from its cursor.
            return end(
                job, .cancelled,
                failure: "the job cannot run with this configuration: \(error.message); fix it (cloak reload), "
                    + "then cloak jobs resume \(job.id.text)")
        }
        guard let caller = dependencies.caller(job.owner), caller.mayImport else {
            return end(
                job, .failed,
                failure: "the job's token no longer holds jobs:import and aliases:create (revoked, expired or changed)")
        }
        let seal: JobSeal
        do { seal = try dependencies.vault.jobSeal(job) } catch {
            return end(job, .failed, failure: "\(error)")
        }
        var input = InputCursor(job: job, seal: seal, plan: plan)
        // A batch at most half of what the rate allows in a lease: the lease, renewed by each
        // commit, never lapses while the runner waits for the rate.
        let jobs = configuration.jobs
        let perHour = configuration.importRowsPerHour
        let batchRows = max(1, min(ImportBatch.maxRows, perHour / 3600 * jobs.leaseSeconds / 2))
        var making = Making(
            plan: plan, admission: caller.admission, rows: batchRows,
            rate: RowRate(perHour: perHour, batch: batchRows, at: DispatchTime.now().uptimeNanoseconds))
        var steps = Steps(from: job.progress, preparesAhead: preparesAhead)
        var action = Steps.Action.check
        while true {
            switch action {
            case .check:
                action = steps.next(
                    Steps.Checks(
                        stopping: stopping.load(ordering: .relaxed), belowDiskReserve: dependencies.belowDiskReserve(),
                        tokenMayImport: mayImport(job)))
            case let .make(from):
                action = steps.made(make(&input, from: from, &making))
            case let .commit(current, makeAhead):
                let answer = commit(job, current, seal: seal, from: steps.progress) {
                    // The next batch is read, checked and sealed while this one commits.
                    if let makeAhead, !stopping.load(ordering: .relaxed) {
                        steps.madeAhead(make(&input, from: makeAhead, &making))
                    }
                }
                action = steps.committed(answer)
                input.committed(through: steps.cursor)
            case let .wait(reason, seconds, log):
                if log {
                    dependencies.logger.info(
                        reason == .diskReserve
                            ? "jobs: waiting for the store's disk to rise above limits.disk_reserve_mib"
                            : "jobs: waiting for room in the token's guess windows (a million distinct values an hour, or limits.guess_memory_mib)",
                        metadata: ["job": "\(job.id)", "seconds": "\(seconds)"])
                }
                action = steps.waited(wait(job, steps.progress, seconds: seconds))
            case let .pause(attempt, reason):
                if let attempt {
                    dependencies.logger.warning(
                        "jobs: a batch failed",
                        metadata: ["job": "\(job.id)", "reason": "\(reason ?? "")", "attempt": "\(attempt)"])
                }
                Thread.sleep(forTimeInterval: 1)
                action = steps.paused()
            case let .end(state, failure):
                return end(job, state, failure: failure)
            case let .finished(moved):
                recordEnd(job, .done, progress: moved)
                drop(job.id)
                dependencies.logger.info(
                    "jobs: job ended",
                    metadata: [
                        "job": "\(job.id)", "state": "done", "imported": "\(moved.imported)",
                        "refused": "\(moved.refused)",
                    ])
                return
            case .letGo:
                dependencies.logger.info(
                    "jobs: the job is no longer this node's (cancelled or taken over)", metadata: ["job": "\(job.id)"])
                return
            }
        }
    }

    /// Hands `current` to the vault, runs `meanwhile` while it commits, and answers what the
    /// vault did. A batch answered past vault.store_timeout_ms may still have committed: the
    /// job's row then says which it was.
    private func commit(
        _ job: StoredJob, _ current: MadeBatch, seal: JobSeal, from progress: JobProgress, meanwhile: () -> Void
    ) -> Steps.Committed {
        let now = Self.now
        let jobs = dependencies.configuration.jobs
        let step = ImportStep(
            job: job.id, holder: holder, from: progress, leaseUntil: now + Int64(jobs.leaseSeconds),
            expiresAt: now + Int64(jobs.outputTTLSeconds), seal: seal)
        let vault = dependencies.vault
        let committing = ThreadWait<Result<JobProgress, VaultError>> { done in
            vault.importBatch(current.batch, step: step, now: { Self.now }, completion: done)
        }
        meanwhile()
        var result = committing.wait()
        if case .failure = result {
            result = settled(job.id, from: progress, rows: current.rows) ?? result
        }
        switch result {
        case let .success(moved): return .moved(moved)
        case .failure(.notFound): return .lost
        case let .failure(error): return .failed("\(error)")
        }
    }

    /// Whether the token `job` runs for may still import (both scopes: an import creates
    /// aliases).
    func mayImport(_ job: StoredJob) -> Bool {
        dependencies.caller(job.owner)?.mayImport == true
    }

    /// The batch from row `from`: up to `making.rows` rows read from `input`, checked, admitted
    /// under the token's guess limits, at the import's rate, and prepared for the vault.
    private func make(_ input: inout InputCursor, from row: Int64, _ making: inout Making) -> Steps.Made {
        let items: [ImportReader.Item]
        let isLast: Bool
        do {
            (items, isLast) = try input.next(from: row, limit: making.rows) { [self] id, from in
                withStore(reads: true) { store in try store.jobChunks(id, part: .input, from: from, limit: 4) }
            }
        } catch let fatal as ImportReader.Fatal {
            return .failed(fatal.description)
        } catch {
            dependencies.logger.warning("jobs: cannot read the input", metadata: ["reason": "\(error)"])
            return .retry
        }
        while let pause = making.rate.take(items.count, at: DispatchTime.now().uptimeNanoseconds) {
            if stopping.load(ordering: .relaxed) { break }
            Thread.sleep(forTimeInterval: pause)
        }
        if stopping.load(ordering: .relaxed) { return .stopped }
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
            case let .success(values): row = making.plan.row(values, line: item.line, today: today)
            }
            // The token's guess limits, as its creates pass them; no room for the row's values
            // (the token's cap, the node's budget) ends the batch before it: the job waits.
            // Only the values whose aliases go back to the importer (the mapping's): the row's id,
            // an expiry or a name kept in its group are never answered with an alias, so they
            // tell a guesser nothing (and a million rows' distinct ids would fill a window).
            if case let .success(values) = row.outcome, let admission = making.admission {
                switch admission.admitRow(values.filter(\.inMapping).map(\.request), vault: vault) {
                case .admitted: break
                case let .refused(refusal):
                    row.outcome = .failure(
                        ImportRefusal(code: CloakError.Code.tooManyRequests.rawValue, reason: refusal.description))
                case let .full(seconds):
                    if rows.isEmpty { return .full(seconds: seconds) }
                    return prepared(rows, isLast: false)
                }
            }
            rows.append(row)
        }
        return prepared(rows, isLast: isLast)
    }

    /// `rows` prepared as a batch (made again from the same row when they cannot be sealed).
    private func prepared(_ rows: [ImportRow], isLast: Bool) -> Steps.Made {
        do {
            return .batch(
                MadeBatch(batch: try dependencies.vault.prepareImport(rows, isLast: isLast), rows: rows.count))
        } catch {
            dependencies.logger.warning("jobs: cannot seal a batch", metadata: ["reason": "\(error)"])
            return .retry
        }
    }
}
