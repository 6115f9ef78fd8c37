import Testing

@testable import CloakService

/// The token buckets, without sockets or a clock.
@Suite struct RateLimiterTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aBucketAllowsItsBurstThenRefillsAtItsRate() {
        let limit = RateLimit(requestsPerMinute: 60, burst: 3)
        var bucket = TokenBucket(limit: limit, now: 0)
        #expect((0..<3).map { _ in bucket.take(limit: limit, now: 0) } == [nil, nil, nil])
        #expect(bucket.take(limit: limit, now: 0) == 1)
        #expect(bucket.take(limit: limit, now: Self.second) == nil)
        #expect(!bucket.isFull(now: Self.second))
        #expect(bucket.isFull(now: 10 * Self.second))
    }

    @Test func ipv6ClientsShareTheBucketOfTheirSlash64() {
        #expect(RateLimiter.Key.client("2001:db8:1:2::1") == RateLimiter.Key.client("2001:db8:1:2:ffff::9"))
        #expect(RateLimiter.Key.client("2001:db8:1:2::1") != RateLimiter.Key.client("2001:db8:1:3::1"))
        #expect(RateLimiter.Key.client("::ffff:192.0.2.7") == RateLimiter.Key.client("192.0.2.7"))
        #expect(RateLimiter.Key.client("192.0.2.7") != RateLimiter.Key.client("192.0.2.8"))
    }

    @Test func pruningForgetsOnlyRefilledBucketsJudgedByTheirOwnLimit() {
        let limiter = RateLimiter()
        let strict = RateLimit(requestsPerMinute: 1, burst: 1)
        let loose = RateLimit(requestsPerMinute: 6000, burst: 600)
        // One drained token bucket, then enough other keys to make every shard prune.
        #expect(limiter.take(.token("t"), limit: loose, now: 0) == nil)
        for i in 0..<(RateLimiter.shardCount * RateLimiter.maxKeysPerShard) {
            _ = limiter.take(.address("a\(i)"), limit: strict, now: Self.second)
        }
        #expect(limiter.count <= RateLimiter.shardCount * RateLimiter.maxKeysPerShard)
    }
}
