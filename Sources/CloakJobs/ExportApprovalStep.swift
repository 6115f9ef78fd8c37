import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Dispatch
import Foundation

/// An approval, the same from the API and `cloak jobs approve`: in one transaction, the job
/// read, every rule checked, the approval sealed under the job's key and stored.
package struct ExportApprovalStep: Sendable {
    let id: JobID
    let token: String
    let person: String
    let rows: Int64
    let fingerprint: String
    let digest: String
    /// `jobs.approval_ttl_s`: how long after its count a selection may be approved, by the
    /// sealed count's own time (a database writer who moves the row's expiry moves nothing).
    let approvalTTL: Int64
    let now: Int64

    package init(
        id: JobID, token: String, person: String, rows: Int64, fingerprint: String, digest: String,
        approvalTTL: Int64, now: Int64
    ) {
        self.id = id
        self.token = token
        self.person = person
        self.rows = rows
        self.fingerprint = fingerprint
        self.digest = digest
        self.approvalTTL = approvalTTL
        self.now = now
    }

    package func run(in store: any AliasStore, seal: (StoredJob) throws -> JobSeal) throws -> Result<
        (StoredJob, ExportSpec, ExportApproval), CloakError
    > {
        guard let job = try store.job(id), job.kind == .export, let spec = ExportSpec(stored: job.spec) else {
            return .failure(.notFound("no such job"))
        }
        guard spec.person != person else {
            return .failure(
                CloakError(.forbidden, "the export was asked for by \(person): another person approves it"))
        }
        guard job.state == .awaitingApproval, (job.expiresAt ?? 0) > now else {
            let state = job.state == .awaitingApproval ? "past jobs.approval_ttl_s" : job.state.rawValue
            return .failure(CloakError(.malformedRequest, "the job is \(state): it is not awaiting approval"))
        }
        let key: JobSeal
        do { key = try seal(job) } catch {
            // The row was altered (its spec, owner or key): the job can never be approved.
            return .failure(CloakError(.vaultUnavailable, "the job's key does not open: its row was altered"))
        }
        guard let summary = try ExportSummary.read(job, seal: key, store: store) else {
            return .failure(CloakError(.malformedRequest, "the job's selection is not counted yet"))
        }
        guard summary.asOf + approvalTTL > now else {
            return .failure(
                CloakError(.malformedRequest, "the job is past jobs.approval_ttl_s: it is not awaiting approval"))
        }
        guard summary.rows == rows, spec.fingerprint == fingerprint, summary.digest == digest else {
            return .failure(
                CloakError(
                    .malformedRequest,
                    "rows, fingerprint and selection_digest must be the job's (\(summary.rows) rows to \(spec.fingerprint)): read its status first"
                ))
        }
        let approval = ExportApproval(
            token: token, person: person, at: now, rows: summary.rows, digest: summary.digest,
            fingerprint: spec.fingerprint)
        let sealed = try key.seal(approval.encoded, part: JobPart.approval.rawValue, index: 0, isLast: true)
        guard try store.approveJob(id, approval: sealed, now: now) else {
            return .failure(CloakError(.malformedRequest, "the job is no longer awaiting approval"))
        }
        return .success((try store.job(id) ?? job, spec, approval))
    }

    /// What the audit event of an approval says.
    package static func facts(_ job: StoredJob, _ spec: ExportSpec, _ approval: ExportApproval) -> [(String, String)] {
        [
            ("job", job.id.text), ("requester", job.owner), ("requester_person", spec.person),
            ("approver_person", approval.person), ("selection_digest", approval.digest), ("rows", "\(approval.rows)"),
            ("recipient", approval.fingerprint),
        ]
    }
}
