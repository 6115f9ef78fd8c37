/// A request rate: `requestsPerMinute` on average, with bursts of up to `burst` at once.
package struct RateLimit: Sendable, Equatable {
    package var requestsPerMinute: Int
    package var burst: Int

    package init(requestsPerMinute: Int, burst: Int) {
        self.requestsPerMinute = requestsPerMinute
        self.burst = burst
    }

    /// The largest rate the configuration takes.
    package static let maxPerMinute = 10_000_000
}

/// One caller's token bucket: it holds up to `burst` tokens, refills at the limit's rate, and
/// each request takes one. A value type with the time passed in, so it is tested without a clock.
struct TokenBucket: Sendable {
    /// Tokens left at `updated` (nanoseconds of a monotonic clock).
    private(set) var tokens: Double
    private(set) var updated: UInt64
    /// The limit the bucket was last used with (pruning judges each bucket by its own).
    private(set) var limit: RateLimit

    /// A full bucket.
    init(limit: RateLimit, now: UInt64) {
        tokens = Double(limit.burst)
        updated = now
        self.limit = limit
    }

    /// Takes `cost` tokens: nil when the request may go, else the whole seconds until one is
    /// back. A request that finds at least one token goes and takes its whole cost, which may
    /// leave the bucket in debt (a batch larger than the burst still goes, once; the requests
    /// after it wait until the debt is paid back at the limit's rate).
    mutating func take(limit: RateLimit, now: UInt64, cost: Int = 1) -> Int? {
        self.limit = limit
        refill(limit: limit, now: now)
        if tokens >= 1 {
            tokens -= Double(max(cost, 0))
            return nil
        }
        let perSecond = Double(limit.requestsPerMinute) / 60
        return max(1, Int(((1 - tokens) / perSecond).rounded(.up)))
    }

    /// Whether the bucket is full again at `now` (it can then be forgotten: a new one is the same).
    func isFull(now: UInt64) -> Bool {
        var copy = self
        copy.refill(limit: limit, now: now)
        return copy.tokens >= Double(limit.burst)
    }

    private mutating func refill(limit: RateLimit, now: UInt64) {
        guard now > updated else { return }
        let seconds = Double(now - updated) / 1e9
        tokens = min(Double(limit.burst), tokens + seconds * Double(limit.requestsPerMinute) / 60)
        updated = now
    }
}
