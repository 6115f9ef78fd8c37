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

/// Open connections per client address across all loop threads, against a fixed maximum per
/// address (0: no limit), so one address cannot hold every slot of the budget.
final class AddressBudget: Sendable {
    let limitPerAddress: Int
    private let open = Mutex<[String: Int]>([:])

    init(limitPerAddress: Int) {
        self.limitPerAddress = limitPerAddress
    }

    /// The budget's key for `address`: an IPv6 client is its /64 (one client holds a whole /64
    /// and could take a new address for every connection), as in the rate limiter.
    static func key(_ address: String) -> String {
        guard let parsed = IPAddress(address), !parsed.isIPv4 else { return address }
        return IPNetwork(parsed.description + "/64")?.description ?? address
    }

    /// Takes a slot for `address` (its ``key(_:)``); false when it already holds its limit.
    func acquire(_ address: String) -> Bool {
        guard limitPerAddress > 0 else { return true }
        let address = Self.key(address)
        return open.withLock { counts in
            let held = counts[address, default: 0]
            guard held < limitPerAddress else { return false }
            counts[address] = held + 1
            return true
        }
    }

    func release(_ address: String) {
        guard limitPerAddress > 0 else { return }
        let address = Self.key(address)
        open.withLock { counts in
            let held = counts[address, default: 0]
            counts[address] = held > 1 ? held - 1 : nil
        }
    }
}
