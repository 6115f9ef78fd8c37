import CloakCore
import CloakCrypto
import CloakHTTP
import CloakJobs
import CloakVault
import Foundation
import Synchronization

/// `GET /admin/jobs/{id}/refusals` off the vault's thread (issue 76): a thread of its own reads
/// the advice a few chunks an executor job, as a download does, and opens and counts them
/// itself, so a million-row import's tally never holds the store's one thread for its length.
/// One tally runs at a time on a node (another asker is told to come back); a done job's tally
/// is kept (its advice never changes), a few dozen at most.
final class JobRefusals: Sendable {
    typealias Answer = Result<(reasons: [RefusalCount.Refusal], otherRows: Int), CloakError>

    private let running = Atomic<Bool>(false)
    private let done = Mutex<[String: (reasons: [RefusalCount.Refusal], otherRows: Int)]>([:])
    static let kept = 32
    static let chunksAStep = 8

    /// Counts `job`'s refusals and answers on `vault`'s loop (or this thread, without one).
    func count(_ job: StoredJob, seal: JobSeal, vault: VaultClient, answer: @escaping @Sendable (Answer) -> Void) {
        let finish: @Sendable (Answer) -> Void = { result in
            if let loop = vault.loop { loop.execute { answer(result) } } else { answer(result) }
        }
        if job.state == .done, let kept = done.withLock({ $0[job.id.text] }) { return finish(.success(kept)) }
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return finish(.failure(CloakError(.tooManyRequests, "another tally of refusals is running: ask again")))
        }
        Thread.detachNewThread { [self] in
            defer { running.store(false, ordering: .releasing) }
            let result = Self.tally(job, seal: seal, vault: vault.vault)
            if case let .success(found) = result, job.state == .done {
                done.withLock { kept in
                    if kept.count >= Self.kept { kept.removeAll() }
                    kept[job.id.text] = found
                }
            }
            finish(result)
        }
    }

    private static func tally(_ job: StoredJob, seal: JobSeal, vault: Vault) -> Answer {
        do {
            let count = try RefusalCount.read(job, seal: seal) { from in
                let read = ThreadWait<Result<[[UInt8]], any Error>>.answer { done in
                    vault.withStore(reads: true) { store in
                        try store.jobChunks(job.id, part: .advice, from: from, limit: chunksAStep)
                    } completion: {
                        done($0)
                    }
                }
                return try read.get()
            }
            return .success(count.result(limit: 20))
        } catch let cut as RefusalCount.CutShort {
            return .failure(.storeUnavailable(cut.description))
        } catch is CryptoError {
            return .failure(.storeUnavailable("the job's advice does not open: altered in the store"))
        } catch {
            return .failure(.storeUnavailable("the job's advice could not be read"))
        }
    }
}
