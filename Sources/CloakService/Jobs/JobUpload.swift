import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import CloakVault
import Dispatch
import Foundation
import Synchronization

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
    /// `jobs.gnupg_home`: where the key of an encrypted body is (nil: such bodies are refused).
    private let gnupgHome: String?
    /// The most an encrypted body may take to arrive, in seconds (a job's receiving limit).
    private let receivingSeconds: Int
    /// The body's first bytes, until there are enough to tell an OpenPGP message (nil once told).
    private var head: [UInt8]? = []
    /// Bytes of the body received (an encrypted one's are not the input's).
    private var received = 0
    /// An encrypted body's decryption, under way.
    private var decryption: UploadDecryption?

    init(
        vault: VaultClient, job: StoredJob, input: JobInput, maxBytes: Int, openLimit: Int, gnupgHome: String?,
        receivingSeconds: Int, outcome: Outcome?, next: @escaping Pull
    ) {
        self.vault = vault
        self.openLimit = openLimit
        self.gnupgHome = gnupgHome
        self.receivingSeconds = receivingSeconds
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
                case let .failure(refused as CloakError): self.fail(refused)
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
            received += bytes.count
            guard received <= maxBytes else {
                return fail(CloakError(.payloadTooLarge, "the file is larger than jobs.max_input_mib allows"))
            }
            if let decryption { return decryption.give(bytes) }
            guard var head else { return plain(bytes) }
            // Enough of the body to tell an OpenPGP message (its armor line, or its first packet).
            head += bytes
            self.head = head
            if head.count >= Self.headBytes { start(head, ended: false) } else { pull() }
        case .end:
            if let decryption { return decryption.end(broken: false) }
            if let head {
                start(head, ended: true)
                if let decryption { return decryption.end(broken: false) }
                if done { return }
            }
            let last: (index: Int, sealed: [UInt8])
            do { last = try input.finish() } catch { return fail(Self.refusal(error)) }
            store([last]) { self.queue(rows: self.input.rows) }
        case let .failed(violation):
            decryption?.end(broken: true)
            if violation?.status == 413 {
                fail(CloakError(.payloadTooLarge, "the file is larger than jobs.max_input_mib allows"))
            } else {
                fail(.malformed("the body could not be read whole; nothing was imported"))
            }
        }
    }

    /// Bytes read before a body is told plain or encrypted.
    static let headBytes = 64

    /// The body's first bytes have come (or all of it, `ended`): a plain file is read on here,
    /// an OpenPGP message handed to GnuPG (``UploadDecryption``), which asks for the rest.
    private func start(_ first: [UInt8], ended: Bool) {
        head = nil
        guard OpenPGPDecryption.looksEncrypted(first) else {
            guard !first.isEmpty else { return }
            return plain(first, pullOn: !ended)
        }
        guard let home = gnupgHome else {
            return fail(
                .malformed(
                    "the file is OpenPGP-encrypted and this node has no jobs.gnupg_home to decrypt it with; nothing was imported"
                ))
        }
        let (vault, job, maxBytes) = (self.vault, self.job, self.maxBytes)
        let started: UploadDecryption
        do {
            started = try UploadDecryption.start(
                owner: job.owner, home: home, input: input, first: first, maxPlaintextBytes: maxBytes,
                seconds: receivingSeconds,
                want: { self.onLoop { self.pull() } },
                store: { chunks in
                    let now = Self.now  // each chunk's own time: a long upload is not an abandoned one
                    let stored = ThreadWait<Result<Bool, any Error>>.answer { done in
                        vault.vault.withStore(
                            reads: false,
                            { store in
                                try Self.append(chunks, to: job, maxBytes: maxBytes, now: now, in: store)
                            }, completion: done)
                    }
                    guard try stored.get() else { throw Cancelled() }
                },
                done: { result in
                    self.onLoop {
                        switch result {
                        case let .success(rows): self.queue(rows: rows)
                        case let .failure(error): self.fail(Self.refusal(error))
                        }
                    }
                })
        } catch {
            switch error {
            case .node:
                return fail(
                    CloakError(
                        .tooManyRequests,
                        "this node is decrypting \(UploadDecryption.maxAtOnce) files already: send this one again shortly"
                    ))
            case .owner:
                return fail(
                    CloakError(
                        .tooManyRequests,
                        "this node is decrypting another file of this token: send this one once that one is queued"))
            }
        }
        decryption = started
    }

    /// Plain bytes of the body: checked, sealed, stored, and then the next piece asked for.
    private func plain(_ bytes: [UInt8], pullOn: Bool = true) {
        let chunks: [(index: Int, sealed: [UInt8])]
        do { chunks = try input.feed(bytes) } catch { return fail(Self.refusal(error)) }
        store(chunks) { if pullOn { self.pull() } }
    }

    /// The job was cancelled (or failed) while its file arrived.
    private struct Cancelled: Error {}

    private func store(_ chunks: [(index: Int, sealed: [UInt8])], then: @escaping @Sendable () -> Void) {
        guard !chunks.isEmpty else { return then() }
        let (job, maxBytes, now) = (self.job, self.maxBytes, Self.now)
        call({ store in try Self.append(chunks, to: job, maxBytes: maxBytes, now: now, in: store) }) { stored in
            guard stored else { return self.fail(.malformed("the job was cancelled while its file arrived")) }
            then()
        }
    }

    /// Stores `chunks` of the job's input while it is still receiving (false: it is not).
    private static func append(
        _ chunks: [(index: Int, sealed: [UInt8])], to job: StoredJob, maxBytes: Int, now: Int64,
        in store: any AliasStore
    )
        throws -> Bool
    {
        for chunk in chunks {
            try JobQuota.checkHeld(store, owner: job.owner, job: job.id, chunk: chunk, maxBytes: maxBytes)
            guard try store.appendJobInput(job.id, index: chunk.index, sealed: chunk.sealed, now: now) else {
                return false
            }
        }
        return true
    }

    private func queue(rows: Int64) {
        guard !done else { return }
        decryption = nil
        let id = job.id
        call({ store in
            try store.setJobState(
                id, from: [.receiving], to: .queued, holder: nil, now: Self.now, expiresAt: nil, failure: nil)
        }) { queued in
            guard queued else { return self.fail(.malformed("the job was cancelled while its file arrived")) }
            self.done = true
            var queuedJob = self.job
            queuedJob.state = .queued
            self.outcome?.alias(nil, .ok, facts: [("job", id.text), ("rows", "\(rows)")])
            var members: [(String, JSONValue)] = []
            if case let .object(report) = JobReport.json(queuedJob) { members = report }
            members.append(("rows", .int(Int(rows))))
            self.finish?(.json(202, .object(members), headers: HTTPResponse.noStoreHeaders))
        }
    }

    private static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    private static func refusal(_ error: any Error) -> CloakError {
        switch error {
        case let fatal as ImportReader.Fatal: return .malformed("the file cannot be imported: \(fatal.description)")
        case let refused as CloakError: return refused
        case let failure as OpenPGPDecryption.Failure where failure.isSetup:
            // The node's own GnuPG (its home, GPGME): not the file's fault, and not for the client.
            return CloakError(.vaultUnavailable, "the node could not start GnuPG; nothing was imported")
        case let failure as OpenPGPDecryption.Failure:
            return .malformed("the file: \(failure.description); nothing was imported")
        case is UploadDecryption.TooSlow:
            return .malformed("the file did not arrive within jobs' receiving limit; nothing was imported")
        case is Cancelled: return .malformed("the job was cancelled while its file arrived")
        case is UploadDecryption.BodyBroken: return .malformed("the body could not be read whole; nothing was imported")
        default: return .storeUnavailable("the file could not be sealed or stored; nothing was imported")
        }
    }

    /// Answers `error` and leaves the job failed, its input deleted.
    private func fail(_ error: CloakError) {
        guard !done else { return }
        done = true
        decryption?.end(broken: true)
        decryption = nil
        outcome?.alias(nil, .refused, facts: [("job", job.id.text)])
        let (id, reason) = (job.id, error.message)
        vault.vault.withStore(reads: false) { store in
            _ = try store.setJobState(
                id, from: [.receiving, .queued], to: .failed, holder: nil, now: Self.now, expiresAt: Self.now + 86_400,
                failure: reason)
            // The first slice at once; the rest by the runners' sweep (a failed job's input).
            _ = try store.deleteJobChunks(id, part: .input, limit: jobChunksPerDelete)
        } completion: { _ in
        }
        finish?(.error(error))
    }
}
