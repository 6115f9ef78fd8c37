import CloakCore
import CloakVault
import Synchronization

/// How many distinct values of one format-preserving bucket (``GuessBucket``: a card's BIN, last
/// four and length) each token aliases in a sliding hour: `limits.bucket_values_per_hour`.
///
/// A token with `aliases:create` gets deterministic aliases, so with an alias in hand it could
/// alias every candidate of the alias's bucket and compare (10^5 for a 16-digit card with BIN and
/// last four kept). A real backend aliases a few distinct cards of one bucket an hour; past the
/// limit the request is refused whole (429, 1429), audited and counted, so guessing one card at
/// the default 30 an hour takes about 1,700 hours on average (10^5 / 2 / 30) and raises an
/// alert on its first refused request. Values aliased before in the window count once.
///
/// Memory is bounded per token (``maxBucketsPerToken`` windows of at most `limit` tags each);
/// a token past it is refused until its oldest window expires: only that token, never others.
final class BucketGuessLimiter: Sendable {
    static let window: UInt64 = 3_600 * 1_000_000_000
    static let maxBucketsPerToken = 100_000

    /// One bucket's distinct values and when each was first seen in the window.
    struct Window: Sendable {
        var seen: [(value: [UInt8], at: UInt64)] = []

        mutating func expire(now: UInt64) {
            if let first = seen.first, now &- first.at < BucketGuessLimiter.window { return }
            seen.removeAll { now &- $0.at >= BucketGuessLimiter.window }
        }

        /// Seconds until the oldest value leaves the window (at least 1).
        func retryAfter(now: UInt64) -> Int {
            guard let first = seen.first else { return 1 }
            let left = BucketGuessLimiter.window &- min(now &- first.at, BucketGuessLimiter.window)
            return max(1, Int((left + 999_999_999) / 1_000_000_000))
        }
    }

    struct Refusal: Sendable, Equatable {
        let format: AliasFormatName
        let retryAfter: Int
    }

    private let tokens = Mutex<[String: [[UInt8]: Window]]>([:])

    /// Admits the values of one request for `token` (all or none): nil when every bucket stays
    /// within `limit` distinct values, else the first bucket past it. Admitted values are recorded.
    func admit(token: String, _ buckets: [GuessBucket], limit: Int, now: UInt64) -> Refusal? {
        guard !buckets.isEmpty else { return nil }
        return tokens.withLock { all -> Refusal? in
            var windows = all[token] ?? [:]
            defer { all[token] = windows.isEmpty ? nil : windows }
            // New values per bucket, in request order.
            var fresh: [[UInt8]: [[UInt8]]] = [:]
            for b in buckets {
                var window = windows[b.bucket] ?? Window()
                window.expire(now: now)
                windows[b.bucket] = window
                let known = window.seen.contains { $0.value == b.value } || fresh[b.bucket]?.contains(b.value) == true
                if !known { fresh[b.bucket, default: []].append(b.value) }
                if window.seen.count + (fresh[b.bucket]?.count ?? 0) > limit {
                    windows = windows.filter { !$0.value.seen.isEmpty }
                    return Refusal(format: b.format, retryAfter: window.retryAfter(now: now))
                }
            }
            if windows.count > Self.maxBucketsPerToken {
                windows = windows.filter { $0.value.seen.contains { now &- $0.at < Self.window } }
                if windows.count + fresh.count > Self.maxBucketsPerToken {
                    let oldest = windows.values.compactMap { $0.seen.first?.at }.min() ?? now
                    let left = Self.window &- min(now &- oldest, Self.window)
                    return Refusal(format: buckets[0].format, retryAfter: max(1, Int((left + 999_999_999) / 1_000_000_000)))
                }
            }
            for (bucket, values) in fresh {
                for value in values { windows[bucket, default: Window()].seen.append((value, now)) }
            }
            windows = windows.filter { !$0.value.seen.isEmpty }
            return nil
        }
    }
}
