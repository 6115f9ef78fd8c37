import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import CloakVault
import Foundation
import Synchronization

/// A job's outputs handed to its owner, and finding a job for a caller.
extension AdminJobsHandler {
    /// `GET /admin/jobs/{id}/mapping` and `/advice`: a done job's file, JSON Lines, opened chunk
    /// by chunk as it is sent; 409 until the job is done.
    func output(_ id: String, _ part: JobPart) throws(CloakError) -> Reply {
        let id = try Self.jobID(id)
        let (vault, outcome) = (self.vault, self.outcome)
        return find(id, owned: true) { job, finish in
            // An import's files for jobs:import, an export's for jobs:export (routes name the scope).
            guard (job.kind == .export) == (part == .export) else { return finish(.error(.notFound("no such job"))) }
            guard job.state == .done else {
                return finish(
                    .error(
                        .malformed("the job is \(job.state.rawValue): its \(part.name) file is whole once it is done")))
            }
            // The length the job counted, where a row a database writer altered cannot make it
            // promise what no chunk could hold.
            let length = job.progress.bytes(part)
            guard length >= 0, length <= Int64(job.progress.outputChunks) * Int64(JobSeal.chunkLimit) else {
                return finish(.error(.storeUnavailable("the job's row does not hold a plausible length")))
            }
            let seal: JobSeal
            do throws(VaultError) { seal = try vault.vault.jobSeal(job) } catch {
                return finish(.error(error.cloakError { _ in "job" }))
            }
            outcome?.alias(nil, .ok, facts: [("job", id.text), ("file", part.name)])
            // An export is the OpenPGP message as GnuPG wrote it (binary); the rest JSON Lines.
            let (type, name) =
                part == .export
                ? (
                    "application/pgp-encrypted",
                    "\(id.text).\(ExportSpec(stored: job.spec)?.layout.rawValue ?? "out").gpg"
                )
                : ("application/x-ndjson", "\(id.text)-\(part.name).jsonl")
            var response = HTTPResponse(
                status: 200,
                headers: [
                    ("Content-Type", type), ("Content-Disposition", "attachment; filename=\"\(name)\""),
                    ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store"),
                ])
            let source = SealedChunkSource.job(id, part: part, seal: seal, vault: vault)
            // Its length is known: the job counted each batch's lines as it committed them.
            response.content = .stream(
                BodyStream { receive in source.next(receive) }, length: Int(length))
            finish(response)
        }
    }

    /// The job `id` when the caller sees it (``sees(_:caller:)``).
    /// `id`'s job for `found`, when the caller sees it (`owned`: when it is the caller's); else
    /// 404, the same as for no job.
    func find(_ id: JobID, owned: Bool = false, _ found: @escaping @Sendable (StoredJob, Reply.Finish) -> Void)
        -> Reply
    {
        let caller = self.caller
        return .later { finish in
            vault.vault.withStore(reads: true) { store in
                try store.job(id)
            } completion: { result in
                let answer: @Sendable () -> Void = { Self.answer(result, caller: caller, owned: owned, finish, found) }
                vault.loop.map { loop in loop.execute(answer) } ?? answer()
            }
        }
    }

    private static func answer(
        _ result: Result<StoredJob?, any Error>, caller: ServiceConfiguration.AccessToken, owned: Bool,
        _ finish: Reply.Finish, _ found: @Sendable (StoredJob, Reply.Finish) -> Void
    ) {
        switch result {
        case .failure: finish(.error(.storeUnavailable("the store could not be read")))
        case let .success(job?) where owned ? owns(job, caller: caller) : sees(job, caller: caller): found(job, finish)
        case .success: finish(.error(.notFound("no such job")))
        }
    }

    static func jobID(_ text: String) throws(CloakError) -> JobID {
        guard let id = JobID(text) else { throw .notFound("no such job") }
        return id
    }
}
