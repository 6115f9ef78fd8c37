import Synchronization

/// The count of open connections across all loop threads, against a fixed maximum.
final class ConnectionBudget: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes one slot; false when all are taken.
    func acquire() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func release() {
        open.subtract(1, ordering: .acquiringAndReleasing)
    }

    var count: Int { open.load(ordering: .relaxed) }
}
