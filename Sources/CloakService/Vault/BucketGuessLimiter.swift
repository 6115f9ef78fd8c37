import CloakCore
import CloakVault
import Synchronization

/// How many distinct values of one bucket (``GuessBucket``: a card's BIN, last four and length;
/// a value's shape and last four) each token aliases in a sliding hour:
/// `limits.bucket_values_per_hour`.
///
/// A token that gets deterministic aliases could, with an alias in hand, alias every candidate
/// of the alias's bucket and compare (10^5 for a 16-digit card with BIN and last four kept). A
/// real backend aliases a few distinct cards of one bucket an hour; past the limit the request is
/// refused whole (429, 1429), audited and counted, so guessing one card at the default 30 an hour
/// takes about 1,700 hours on average (10^5 / 2 / 30). Values aliased before in the window count
/// once. Values redacted from an upstream's answer are counted and alerted on but never refused
/// (the upstream has acted by then).
///
/// State is per token, in shards (one lock per shard, never a global one), each token's windows
/// in one reference changed in place. Memory is bounded per token (``maxBucketsPerToken``
/// windows of at most `limit` tags of 32 bytes); past it the token's expired windows are dropped,
/// and if none can be, the token is refused until its oldest expires: only that token.
final class BucketGuessLimiter: Sendable {
    static let window: UInt64 = 3_600 * 1_000_000_000
    static let maxBucketsPerToken = 100_000
    static let shardCount = 16

    /// One bucket's distinct values and when each was first seen, oldest first.
    struct Window: Sendable {
        var seen: [(value: GuessTag, at: UInt64)] = []

        mutating func expire(now: UInt64) {
            guard let first = seen.first, now &- first.at >= BucketGuessLimiter.window else { return }
            seen.removeAll { now &- $0.at >= BucketGuessLimiter.window }
        }

        func contains(_ value: GuessTag) -> Bool { seen.contains { $0.value == value } }
    }

    struct Refusal: Sendable, Equatable {
        let format: AliasFormatName
        let retryAfter: Int
    }

    /// Whether values past the limit are refused or only reported.
    enum Mode: Sendable { case enforce, countOnly }

    private final class TokenWindows: @unchecked Sendable {  // guarded by its shard's lock
        var windows: [GuessTag: Window] = [:]
        /// Values of requests under way on the unnamed path (``reserveUnnamed(token:count:limit:now:)``).
        var inFlight = 0
    }

    private final class Shard: Sendable {
        let tokens = Mutex<[String: TokenWindows]>([:])
    }

    private let shards: [Shard] = (0..<BucketGuessLimiter.shardCount).map { _ in Shard() }

    static func seconds(until expiry: UInt64, now: UInt64) -> Int {
        let left = Self.window &- min(now &- expiry, Self.window)
        return max(1, Int((left + 999_999_999) / 1_000_000_000))
    }

    /// Admits the values of one request for `token` (all or none): nil when every bucket stays
    /// within `limit` distinct values, else the first bucket past it. Admitted values are
    /// recorded; with ``Mode/countOnly`` every value is recorded (up to the limit) and a bucket
    /// past it is still returned, for the alert.
    func admit(token: String, _ buckets: [GuessBucket], limit: Int, now: UInt64, mode: Mode = .enforce) -> Refusal? {
        admitRecording(token: token, buckets, limit: limit, now: now, mode: mode).refusal
    }

    /// ``admit(token:_:limit:now:mode:)``, also returning the values it recorded that the window
    /// did not hold before (a reservation ``release(token:_:)`` can give back).
    func admitRecording(token: String, _ buckets: [GuessBucket], limit: Int, now: UInt64, mode: Mode = .enforce)
        -> (refusal: Refusal?, recorded: [GuessBucket])
    {
        guard !buckets.isEmpty else { return (nil, []) }
        return shard(token).tokens.withLock { tokens -> (refusal: Refusal?, recorded: [GuessBucket]) in
            let state = Self.windows(of: token, in: &tokens)
            // New values per bucket, in request order.
            var fresh: [GuessTag: [GuessTag]] = [:]
            var recorded: [GuessBucket] = []
            var refusal: Refusal?
            for b in buckets {
                state.windows[b.bucket]?.expire(now: now)
                let window = state.windows[b.bucket]
                let known = window?.contains(b.value) == true || fresh[b.bucket]?.contains(b.value) == true
                if known { continue }
                // Enforcing, the values of the token's requests under way on the unnamed path count
                // too: any of them may miss in this bucket (recorded when they end).
                let underWay = mode == .enforce ? state.inFlight : 0
                if (window?.seen.count ?? 0) + (fresh[b.bucket]?.count ?? 0) + underWay >= limit {
                    if refusal == nil {
                        refusal = Refusal(
                            format: b.format,
                            retryAfter: window?.seen.first.map { Self.seconds(until: $0.at, now: now) } ?? 1)
                    }
                    if mode == .enforce { break }
                    continue
                }
                fresh[b.bucket, default: []].append(b.value)
                recorded.append(b)
            }
            if mode == .enforce, refusal != nil {
                Self.dropEmpty(state, buckets)
                return (refusal, [])
            }
            let newBuckets = fresh.keys.filter { state.windows[$0] == nil }.count
            if state.windows.count + newBuckets > Self.maxBucketsPerToken {
                state.windows = state.windows.filter { $0.value.seen.contains { now &- $0.at < Self.window } }
                if state.windows.count + newBuckets > Self.maxBucketsPerToken {
                    let oldest = state.windows.values.compactMap { $0.seen.first?.at }.min() ?? now
                    return (Refusal(format: buckets[0].format, retryAfter: Self.seconds(until: oldest, now: now)), [])
                }
            }
            for (bucket, values) in fresh {
                for value in values { state.windows[bucket, default: Window()].seen.append((value, now)) }
            }
            Self.dropEmpty(state, buckets)
            if state.windows.isEmpty && state.inFlight == 0 { tokens[token] = nil }
            return (refusal, recorded)
        }
    }

    /// Gives back values ``admitRecording(token:_:limit:now:mode:)`` recorded (a lookup's hits:
    /// only a value not found counts as a guess).
    func release(token: String, _ recorded: [GuessBucket]) {
        guard !recorded.isEmpty else { return }
        shard(token).tokens.withLock { tokens in
            guard let state = tokens[token] else { return }
            for b in recorded {
                guard var window = state.windows[b.bucket],
                    let i = window.seen.lastIndex(where: { $0.value == b.value })
                else { continue }
                window.seen.remove(at: i)
                state.windows[b.bucket] = window.seen.isEmpty ? nil : window
            }
            if state.windows.isEmpty && state.inFlight == 0 { tokens[token] = nil }
        }
    }

    /// Reserves room for `count` values without working out their buckets (four HMAC tags a
    /// value): true when the token's windows, all buckets together, and the values of its
    /// requests under way hold at most `limit - count`, so that however these values fall into
    /// buckets none can pass `limit`. A token that never misses (a backend paying with aliases
    /// it holds) stays here; one that guesses fills its windows and takes the per-bucket path
    /// (``admitRecording(token:_:limit:now:mode:)``). End it with ``endUnnamed(token:count:)``,
    /// after recording the misses.
    func reserveUnnamed(token: String, count: Int, limit: Int, now: UInt64) -> Bool {
        shard(token).tokens.withLock { tokens in
            // Kept after its requests end (one per token that asks): no allocation a request.
            let state = Self.windows(of: token, in: &tokens)
            var held = state.inFlight + count
            if !state.windows.isEmpty {
                for key in Array(state.windows.keys) {
                    state.windows[key]?.expire(now: now)
                    let seen = state.windows[key]?.seen.count ?? 0
                    if seen == 0 { state.windows[key] = nil }
                    held += seen
                    if held > limit { break }
                }
            }
            guard held <= limit else { return false }
            state.inFlight += count
            return true
        }
    }

    /// Ends a reservation of ``reserveUnnamed(token:count:limit:now:)``.
    func endUnnamed(token: String, count: Int) {
        shard(token).tokens.withLock { tokens in tokens[token]?.inFlight -= count }
    }

    private func shard(_ token: String) -> Shard {
        shards[Int(UInt(bitPattern: token.hashValue) % UInt(Self.shardCount))]
    }

    /// The token's windows, made (and kept in `tokens`) when it has none.
    private static func windows(of token: String, in tokens: inout [String: TokenWindows]) -> TokenWindows {
        if let found = tokens[token] { return found }
        let made = TokenWindows()
        tokens[token] = made
        return made
    }

    /// Drops the windows of `buckets` that hold nothing (only those the request touched).
    private static func dropEmpty(_ state: TokenWindows, _ buckets: [GuessBucket]) {
        for b in buckets where state.windows[b.bucket]?.seen.isEmpty == true { state.windows[b.bucket] = nil }
    }
}
