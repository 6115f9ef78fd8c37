import CloakCore
import CloakHTTP
import CloakVault
import Dispatch
import Foundation

/// `POST /admin/jobs/imports`: a new import's input read from the request's body as it arrives
/// (``JobInput``: checked as a node will read it, sealed in chunks), each chunk written by the
/// vault before the body is read further, so a fast client is held back by TCP and memory stays
/// one chunk. The job is queued only once the body has ended and every chunk is stored; a body
/// refused or broken on the way leaves the job failed with its input deleted at once (no
/// refused upload fills the disk).
///
/// Touched only on the request's loop: the body's pieces and the vault's completions arrive there.
final class JobUpload: @unchecked Sendable {
    typealias Pull = @Sendable (@escaping @Sendable (BodyStream.Piece) -> Void) -> Void

    private let vault: VaultClient
    private let nextPiece: Pull
    private var input: JobInput
    private let job: StoredJob
    private let maxBytes: Int
    private let outcome: Outcome?
    private var finish: Reply.Finish?
    private var done = false

    private let openLimit: Int

    init(
        vault: VaultClient, job: StoredJob, input: JobInput, maxBytes: Int, openLimit: Int, outcome: Outcome?,
        next: @escaping Pull
    ) {
        self.vault = vault
        self.openLimit = openLimit
        self.job = job
        self.input = input
        self.maxBytes = maxBytes
        self.outcome = outcome
        self.nextPiece = next
    }

    /// Creates the job, then reads the body; answers through `finish`, once.
    func start(_ finish: Reply.Finish) {
        self.finish = finish
        let (job, limit) = (self.job, openLimit)
        call({ store in try store.createJob(job, openLimit: limit) }) { created in
            guard created else { return self.fail(JobQuota.reached(limit)) }
            self.pull()
        }
    }

    private func onLoop(_ work: @escaping @Sendable () -> Void) {
        if let loop = vault.loop { loop.execute(work) } else { DispatchQueue.global().async(execute: work) }
    }

    /// Runs `body` on the vault; `then` on the loop when it succeeded, a failure otherwise.
    private func call<T: Sendable>(
        _ body: @escaping (any AliasStore) throws -> T, then: @escaping @Sendable (T) -> Void
    ) {
        vault.vault.withStore(reads: false, body) { result in
            self.onLoop {
                switch result {
                case let .success(value): then(value)
                case .failure:
                    self.fail(.storeUnavailable("the store could not keep the job's input; nothing was imported"))
                }
            }
        }
    }

    private func pull() {
        nextPiece { piece in self.onLoop { self.received(piece) } }
    }

    private func received(_ piece: BodyStream.Piece) {
        guard !done else { return }
        switch piece {
        case let .bytes(bytes):
            guard input.bytes + bytes.count <= maxBytes else {
                return fail(CloakError(.payloadTooLarge, "the file is larger than jobs.max_input_mib allows"))
            }
            let chunks: [(index: Int, sealed: [UInt8])]
            do { chunks = try input.feed(bytes) } catch { return fail(Self.refusal(error)) }
            store(chunks) { self.pull() }
        case .end:
            let last: (index: Int, sealed: [UInt8])
            do { last = try input.finish() } catch { return fail(Self.refusal(error)) }
            store([last]) { self.queue() }
        case let .failed(violation):
            if violation?.status == 413 {
                fail(CloakError(.payloadTooLarge, "the file is larger than jobs.max_input_mib allows"))
            } else {
                fail(.malformed("the body could not be read whole; nothing was imported"))
            }
        }
    }

    private func store(_ chunks: [(index: Int, sealed: [UInt8])], then: @escaping @Sendable () -> Void) {
        guard !chunks.isEmpty else { return then() }
        let id = job.id
        let now = Self.now
        call({ store -> Bool in
            for chunk in chunks {
                guard try store.appendJobInput(id, index: chunk.index, sealed: chunk.sealed, now: now) else {
                    return false
                }
            }
            return true
        }) { stored in
            guard stored else { return self.fail(.malformed("the job was cancelled while its file arrived")) }
            then()
        }
    }

    private func queue() {
        let (id, rows) = (job.id, input.rows)
        call({ store in
            try store.setJobState(
                id, from: [.receiving], to: .queued, holder: nil, now: Self.now, expiresAt: nil, failure: nil)
        }) { queued in
            guard queued else { return self.fail(.malformed("the job was cancelled while its file arrived")) }
            self.done = true
            var queuedJob = self.job
            queuedJob.state = .queued
            self.outcome?.alias(nil, "ok", facts: [("job", id.text), ("rows", "\(rows)")])
            var members: [(String, JSONValue)] = []
            if case let .object(report) = JobReport.json(queuedJob) { members = report }
            members.append(("rows", .int(Int(rows))))
            self.finish?(.json(202, .object(members), headers: HTTPResponse.noStoreHeaders))
        }
    }

    private static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    private static func refusal(_ error: any Error) -> CloakError {
        if let fatal = error as? ImportReader.Fatal {
            return .malformed("the file cannot be imported: \(fatal.description)")
        }
        return .storeUnavailable("the file could not be sealed")
    }

    /// Answers `error` and leaves the job failed, its input deleted.
    private func fail(_ error: CloakError) {
        guard !done else { return }
        done = true
        outcome?.alias(nil, "refused", facts: [("job", job.id.text)])
        let (id, reason) = (job.id, error.message)
        vault.vault.withStore(reads: false) { store in
            _ = try store.setJobState(
                id, from: [.receiving, .queued], to: .failed, holder: nil, now: Self.now, expiresAt: Self.now + 86_400,
                failure: reason)
            try store.deleteJobInput(id)
        } completion: { _ in
        }
        finish?(.error(error))
    }
}

/// `jobs.max_open_per_token`: how a job past it is refused.
enum JobQuota {
    static func reached(_ limit: Int) -> CloakError {
        CloakError(
            .tooManyRequests,
            "the token has \(limit) jobs that have not ended (jobs.max_open_per_token): wait for one, or cancel one")
    }
}
