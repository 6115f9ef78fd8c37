import CloakVault
import Foundation
import Logging
import Synchronization

/// A job's lease on the runner's side: renewed while the runner waits or reads (a commit
/// renews it too), and what a batch whose answer was lost did.
extension JobRunner {
    /// Renews the job's lease (a commit of no progress) when ``LeaseRenewal`` says it is due:
    /// true when renewed or not due, false when the job is no longer this node's, nil when the
    /// store did not answer (asked again next time; the lease has two more thirds).
    func renew(_ job: StoredJob, _ progress: JobProgress, lease: inout LeaseRenewal) -> Bool? {
        let seconds = dependencies.configuration.jobs.leaseSeconds
        guard lease.isDue(at: Date().timeIntervalSince1970, leaseSeconds: seconds) else { return true }
        let (holder, until) = (self.holder, Self.now + Int64(seconds))
        let result = withStore { store in
            try store.advanceJob(
                job.id, holder: holder, from: progress.cursor, to: progress, leaseUntil: until, outputs: [],
                now: Self.now)
        }
        guard case let .success(renewed) = result else { return nil }
        lease.renewed(at: Date().timeIntervalSince1970)
        return renewed
    }

    /// A lease renewed now, as a job's first commit renews it.
    func freshLease() -> LeaseRenewal { LeaseRenewal(renewedAt: Date().timeIntervalSince1970) }

    /// Waits `seconds` with the import's lease kept (renewed at once, then every third of a
    /// lease, however short or long the waits), the node's stop and the token looked at every
    /// fifth of a second.
    func wait(_ job: StoredJob, _ progress: JobProgress, seconds: Int) -> ImportSteps<MadeBatch>.Waited {
        var lease = LeaseRenewal.due
        let until = Date().addingTimeInterval(Double(seconds))
        while true {
            if stopping.load(ordering: .relaxed) { return .stopping }
            // The token is asked again as for every batch: one revoked meanwhile stops its job.
            guard mayImport(job) else { return .revoked }
            // A store that did not answer is asked again at the next turn; only a job that is
            // no longer this node's ends the wait.
            if renew(job, progress, lease: &lease) == false { return .lost }
            if Date() >= until { return .elapsed }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// What became of a batch whose answer was a failure, from the job's row: committed (the
    /// holder is still this node and the cursor moved by the batch's rows), or not (nil: the
    /// failure stands; a job taken over or cancelled is then found so by the retry).
    func settled(_ id: JobID, from: JobProgress, rows: Int) -> Result<JobProgress, VaultError>? {
        let holder = self.holder
        guard case let .success(job?) = withStore(reads: true, { store in try store.job(id) }) else { return nil }
        let moved = job.progress.cursor == from.cursor + Int64(rows)
        // The last batch ends the job and drops its lease with it.
        if job.state == .done { return moved ? .success(job.progress) : .failure(.notFound) }
        guard job.state == .running, job.lease?.holder == holder else { return .failure(.notFound) }
        return moved ? .success(job.progress) : nil
    }
}
