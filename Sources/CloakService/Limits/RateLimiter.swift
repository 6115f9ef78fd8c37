import Glibc
import Synchronization

/// Token buckets for every caller, sharded by key so loop threads rarely meet on a lock (one
/// short critical section per request, never a global one).
///
/// Memory is bounded: a shard that grows past ``maxKeysPerShard`` forgets the buckets that have
/// refilled (a forgotten bucket and a new one are the same), and when every bucket is still
/// draining it forgets the oldest half; that can only favour callers, never lock one out.
final class RateLimiter: Sendable {
    enum Key: Hashable, Sendable {
        case address(String)
        case token(String)

        /// The bucket of a client address: the address itself for IPv4 (and IPv4-mapped IPv6),
        /// its /64 for IPv6, since one client holds a whole /64 and could rotate through it.
        static func client(_ address: String) -> Key {
            // A byte search: `String.contains(_:)` is Foundation's (4.6k instructions a request).
            guard address.utf8.contains(UInt8(ascii: ":")) else { return .address(address) }
            var bytes = in6_addr()
            guard inet_pton(AF_INET6, address, &bytes) == 1 else { return .address(address) }
            let raw = withUnsafeBytes(of: bytes) { Array($0) }
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
                return .address(raw[12..<16].map(String.init).joined(separator: "."))
            }
            return .address(raw[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64")
        }
    }

    static let shardCount = 64
    static let maxKeysPerShard = 2_048

    private final class Shard: Sendable {
        let buckets = Mutex<[Key: TokenBucket]>([:])
    }

    private let shards: [Shard]

    init() {
        shards = (0..<Self.shardCount).map { _ in Shard() }
    }

    /// Takes `cost` requests from `key`'s bucket: nil when it may go, else the seconds to wait.
    func take(_ key: Key, limit: RateLimit, now: UInt64, cost: Int = 1) -> Int? {
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(Self.shardCount))]
        return shard.buckets.withLock { buckets -> Int? in
            if buckets.count >= Self.maxKeysPerShard && buckets[key] == nil {
                Self.prune(&buckets, now: now)
            }
            // One lookup: the bucket is taken from in place (a new one made only when missing).
            return buckets[key, default: TokenBucket(limit: limit, now: now)].take(limit: limit, now: now, cost: cost)
        }
    }

    /// Token buckets are never forgotten while draining: tokens are few (configured), and one in
    /// debt from a large batch would come back full. Addresses are many and never in debt.
    private static func prune(_ buckets: inout [Key: TokenBucket], now: UInt64) {
        buckets = buckets.filter { !$0.value.isFull(now: now) }
        if buckets.count >= maxKeysPerShard {
            let byAge = buckets.filter { if case .address = $0.key { true } else { false } }
                .sorted { $0.value.updated < $1.value.updated }
            for (key, _) in byAge.prefix(byAge.count / 2) { buckets[key] = nil }
        }
    }

    /// The number of buckets held (tests).
    var count: Int { shards.reduce(0) { $0 + $1.buckets.withLock { $0.count } } }
}
