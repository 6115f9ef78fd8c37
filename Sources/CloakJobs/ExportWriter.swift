import CloakCore
import CloakCrypto
import CloakVault
import Foundation
import Logging

/// GnuPG's message into the job's sealed chunks, each committed as it fills, with the lease.
/// Used on the runner's thread only (GnuPG's callbacks run there).
package final class ExportWriter {
    private let runner: JobRunner
    private let job: StoredJob
    private let seal: JobSeal
    private var buffer: [UInt8] = []
    /// What the store holds (the first commit moves the cursor on from the last run's).
    private var committed: JobProgress
    private var storedCursor: Int64
    private var lease: LeaseRenewal
    /// Rows handed to GnuPG so far.
    var rowsRead: Int64 = 0

    init(runner: JobRunner, job: StoredJob, seal: JobSeal, summary: ExportSummary) {
        self.runner = runner
        self.job = job
        self.seal = seal
        storedCursor = job.progress.cursor
        lease = runner.freshLease()
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
        let seconds = runner.dependencies.configuration.jobs.leaseSeconds
        guard lease.isDue(at: Date().timeIntervalSince1970, leaseSeconds: seconds) else { return }
        let (job, holder, from, progress) = (self.job, runner.holder, storedCursor, committed)
        let now = JobRunner.now
        let result = runner.withStore { store in
            try store.advanceJob(
                job.id, holder: holder, from: from, to: progress, leaseUntil: now + Int64(seconds), outputs: [],
                now: now)
        }
        guard case .success(true) = result else {
            if case .success(false) = result { throw JobRunnerLost() }
            return
        }
        storedCursor = progress.cursor
        lease.renewed(at: Date().timeIntervalSince1970)
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
        lease.renewed(at: Date().timeIntervalSince1970)
        if isLast { runner.drop(job.id) }
    }
}

/// The job is no longer this node's (cancelled, or taken over after a stall).
package struct JobRunnerLost: Error {}
