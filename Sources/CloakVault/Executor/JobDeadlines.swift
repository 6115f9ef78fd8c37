import Dispatch
import Synchronization

/// The store's answer time limit (`vault.store_timeout_ms`): a job not finished within it is
/// failed with ``StoreError/unavailable(_:)`` (503 upstream), so no request waits on a store that
/// does not answer (a primary gone, a failover under way). A job's completion runs exactly once:
/// whichever comes first, its outcome or its deadline. A write whose commit finishes after its
/// deadline was answered 503, never acknowledged: the caller retries, and a deduplicated value
/// then finds the record it wrote.
///
/// One sweep every `timeout / 4` (at most 100 ms) over the jobs in flight; a job costs an insert
/// and a removal under a lock.
final class JobDeadlines: Sendable {
    /// Claimed once, by the outcome or the deadline.
    final class Claim: Sendable {
        private let taken = Atomic<Bool>(false)
        func take() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
    }

    private struct Pending {
        let deadline: UInt64
        let claim: Claim
        let fail: @Sendable () -> Void
    }

    let timeoutNanoseconds: UInt64
    private let pending = Mutex<(next: UInt64, jobs: [UInt64: Pending])>((0, [:]))
    private let timer: Timer

    /// A dispatch timer: its calls are thread-safe.
    private final class Timer: @unchecked Sendable {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cloak.vault-deadlines"))
    }

    init(timeoutMilliseconds: Int) {
        timeoutNanoseconds = UInt64(max(timeoutMilliseconds, 1)) * 1_000_000
        let period = min(max(timeoutMilliseconds / 4, 10), 100)
        timer = Timer()
        timer.source.schedule(deadline: .now() + .milliseconds(period), repeating: .milliseconds(period))
        timer.source.setEventHandler { [weak self] in self?.sweep() }
        timer.source.resume()
    }

    deinit { timer.source.cancel() }

    /// Registers a job; `fail` runs when its deadline passes first. Returns the claim its outcome
    /// must take, and the token that ends the registration.
    func register(fail: @escaping @Sendable () -> Void) -> (claim: Claim, id: UInt64) {
        let claim = Claim()
        let deadline = DispatchTime.now().uptimeNanoseconds + timeoutNanoseconds
        let id = pending.withLock { state -> UInt64 in
            state.next += 1
            state.jobs[state.next] = Pending(deadline: deadline, claim: claim, fail: fail)
            return state.next
        }
        return (claim, id)
    }

    /// The job finished (or failed) on its own.
    func finished(_ id: UInt64) {
        _ = pending.withLock { $0.jobs.removeValue(forKey: id) }
    }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let overdue = pending.withLock { state -> [Pending] in
            let late = state.jobs.filter { $0.value.deadline <= now }
            for id in late.keys { state.jobs.removeValue(forKey: id) }
            return Array(late.values)
        }
        for job in overdue where job.claim.take() { job.fail() }
    }
}
