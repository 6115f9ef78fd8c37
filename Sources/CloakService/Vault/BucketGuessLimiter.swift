import CloakCore
import CloakVault
import Synchronization

/// How many distinct values of one bucket (``GuessBucket``: a card's BIN, last four and length;
/// a value's shape and last four) each guess account aliases in a sliding hour:
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
/// Values are counted per guess account: a token's own id, or for a minted token the root that
/// minted it (minting many tokens does not multiply the limit). State is per account, in shards
/// (one lock per shard, never a global one), each account's windows in one reference changed in
/// place. Memory is bounded per presenting token: a window is charged to the token whose request
/// opened it, and one token may hold at most ``bucketCap`` windows (``maxBucketsPerToken``
/// buckets, each at most `limit` tags of 32 bytes). Past it the account's expired windows are
/// dropped, and if the token still has no room it is refused until its oldest expires: only
/// that token, never the other tokens of its account (a minted token cannot lock out its minter).
/// The tokens minted under an account share one more ceiling (``mintedCeiling``, twice the cap):
/// without it, minting more children multiplied the memory one account could hold. The root
/// is held only to its own cap, so an account holds at most three caps of windows.
final class BucketGuessLimiter: Sendable {
    static let window: UInt64 = 3_600 * 1_000_000_000
    /// The most buckets one presenting token may hold windows in (the default ``bucketCap``).
    static let maxBucketsPerToken = 100_000
    static let shardCount = 16

    /// The most windows one presenting token may hold open.
    let bucketCap: Int
    /// The most windows of an account the tokens minted under it may open, together.
    var mintedCeiling: Int { 2 * bucketCap }

    /// One bucket's distinct values and when each was first seen, oldest first.
    struct Window: Sendable {
        /// The presenting token whose request opened the window: its ``bucketCap`` pays for it.
        let opener: String
        var seen: [(value: GuessTag, at: UInt64)] = []

        mutating func expire(now: UInt64) {
            guard let first = seen.first, now &- first.at >= BucketGuessLimiter.window else { return }
            seen.removeAll { now &- $0.at >= BucketGuessLimiter.window }
        }

        func contains(_ value: GuessTag) -> Bool { seen.contains { $0.value == value } }
    }

    struct Refusal: Sendable, Equatable {
        /// Which limit refused.
        enum Limit: Sendable, Equatable {
            /// `limits.bucket_values_per_hour`: distinct values of one bucket in the hour.
            case valuesPerBucket
            /// ``BucketGuessLimiter/bucketCap`` (the number): buckets the presenting token holds
            /// windows in.
            case buckets(Int)
        }

        let format: AliasFormatName
        let retryAfter: Int
        var limit: Limit = .valuesPerBucket
    }

    /// Whether values past the limit are refused or only reported.
    enum Mode: Sendable { case enforce, countOnly }

    /// One guess account's windows.
    private final class AccountWindows: @unchecked Sendable {  // guarded by its shard's lock
        var windows: [GuessTag: Window] = [:]
        /// How many of ``windows`` each presenting token opened (what its cap is held to).
        var opened: [String: Int] = [:]
        /// Values of requests under way on the unnamed path (``reserveUnnamed(token:count:limit:now:)``).
        var inFlight = 0

        var isIdle: Bool { windows.isEmpty && inFlight == 0 }

        /// Records `value` in `bucket`, opening its window on `presenter`'s cap when it has none.
        func record(_ value: GuessTag, in bucket: GuessTag, at now: UInt64, by presenter: String) {
            if windows[bucket] == nil { opened[presenter, default: 0] += 1 }
            windows[bucket, default: Window(opener: presenter)].seen.append((value, now))
        }

        /// Drops the window of `bucket`, giving its place back to the token that opened it.
        func drop(_ bucket: GuessTag) {
            guard let window = windows.removeValue(forKey: bucket) else { return }
            let left = (opened[window.opener] ?? 1) - 1
            opened[window.opener] = left > 0 ? left : nil
        }

        /// Drops the window of `bucket` when it holds nothing.
        func dropIfEmpty(_ bucket: GuessTag) {
            if windows[bucket]?.seen.isEmpty == true { drop(bucket) }
        }

        /// Drops every window whose values have all left the hour.
        func dropExpired(now: UInt64) {
            let stale = windows.filter { !$0.value.seen.contains { now &- $0.at < BucketGuessLimiter.window } }.keys
            for bucket in Array(stale) { drop(bucket) }
        }

        /// When the oldest value of the windows `presenter` opened was seen.
        func oldest(openedBy presenter: String) -> UInt64? {
            windows.values.lazy.filter { $0.opener == presenter }.compactMap { $0.seen.first?.at }.min()
        }
    }

    private final class Shard: Sendable {
        let tokens = Mutex<[String: AccountWindows]>([:])
    }

    private let shards: [Shard] = (0..<BucketGuessLimiter.shardCount).map { _ in Shard() }

    /// - Parameter bucketCap: the most buckets one presenting token may hold windows in.
    init(bucketCap: Int = BucketGuessLimiter.maxBucketsPerToken) {
        self.bucketCap = bucketCap
    }

    static func seconds(until expiry: UInt64, now: UInt64) -> Int {
        let left = Self.window &- min(now &- expiry, Self.window)
        return max(1, Int((left + 999_999_999) / 1_000_000_000))
    }

    /// Admits the values of one request that `presenter` (nil: the account's own token) made for
    /// the guess account `token` (all or none): nil when every bucket stays within `limit`
    /// distinct values and the presenter within ``bucketCap`` buckets, else the refusal (the
    /// first bucket past the limit, or the cap). Admitted values are recorded; with
    /// ``Mode/countOnly`` every value is recorded (up to the limit) and a bucket past it is still
    /// returned, for the alert.
    func admit(
        token: String, presenter: String? = nil, _ buckets: [GuessBucket], limit: Int, now: UInt64,
        mode: Mode = .enforce
    ) -> Refusal? {
        admitRecording(token: token, presenter: presenter, buckets, limit: limit, now: now, mode: mode).refusal
    }

    /// ``admit(token:presenter:_:limit:now:mode:)``, also returning the values it recorded that
    /// the window did not hold before (a reservation ``release(token:_:)`` can give back).
    func admitRecording(
        token: String, presenter: String? = nil, _ buckets: [GuessBucket], limit: Int, now: UInt64,
        mode: Mode = .enforce
    ) -> (refusal: Refusal?, recorded: [GuessBucket]) {
        guard !buckets.isEmpty else { return (nil, []) }
        let presenter = presenter ?? token
        let cap = bucketCap, ceiling = mintedCeiling
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
                // Enforcing, the values of the account's requests under way on the unnamed path
                // count too: any of them may miss in this bucket (recorded when they end).
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
            // Windows whose values have all left the hour go: a value in their bucket opens a new
            // window, on its presenter's cap.
            for b in buckets { state.dropIfEmpty(b.bucket) }
            if mode == .enforce, refusal != nil { return (refusal, []) }
            let newBuckets = fresh.keys.filter { state.windows[$0] == nil }.count
            // Room for the new windows: on the presenting token's cap, and for a minted token
            // (its presenter is not the account's root) under the ceiling its account's minted
            // tokens share (the windows the root did not open). Expired windows go first.
            let overCap = { state.opened[presenter, default: 0] + newBuckets > cap }
            let overCeiling = {
                presenter != token && state.windows.count - state.opened[token, default: 0] + newBuckets > ceiling
            }
            if newBuckets > 0, overCap() || overCeiling() {
                state.dropExpired(now: now)
                if let limit = overCap() ? cap : overCeiling() ? ceiling : nil {
                    let oldest = state.oldest(openedBy: presenter) ?? now
                    if state.isIdle { tokens[token] = nil }
                    return (
                        Refusal(
                            format: buckets[0].format, retryAfter: Self.seconds(until: oldest, now: now),
                            limit: .buckets(limit)),
                        []
                    )
                }
            }
            for (bucket, values) in fresh {
                for value in values { state.record(value, in: bucket, at: now, by: presenter) }
            }
            if state.isIdle { tokens[token] = nil }
            return (refusal, recorded)
        }
    }

    /// Gives back values ``admitRecording(token:presenter:_:limit:now:mode:)`` recorded (a
    /// lookup's hits: only a value not found counts as a guess).
    func release(token: String, _ recorded: [GuessBucket]) {
        guard !recorded.isEmpty else { return }
        shard(token).tokens.withLock { tokens in
            guard let state = tokens[token] else { return }
            for b in recorded {
                guard let i = state.windows[b.bucket]?.seen.lastIndex(where: { $0.value == b.value }) else { continue }
                state.windows[b.bucket]?.seen.remove(at: i)
                state.dropIfEmpty(b.bucket)
            }
            if state.isIdle { tokens[token] = nil }
        }
    }

    /// Reserves room for `count` values without working out their buckets (four HMAC tags a
    /// value): true when the account's windows, all buckets together, and the values of its
    /// requests under way hold at most `limit - count`, so that however these values fall into
    /// buckets none can pass `limit` (nor, holding at most `limit` windows, any cap). A token
    /// that never misses (a backend paying with aliases it holds) stays here; one that guesses
    /// fills its windows and takes the per-bucket path
    /// (``admitRecording(token:presenter:_:limit:now:mode:)``). End it with
    /// ``endUnnamed(token:count:)``, after recording the misses.
    func reserveUnnamed(token: String, count: Int, limit: Int, now: UInt64) -> Bool {
        shard(token).tokens.withLock { tokens in
            // Kept after its requests end (one per account that asks): no allocation a request.
            let state = Self.windows(of: token, in: &tokens)
            var held = state.inFlight + count
            if !state.windows.isEmpty {
                for key in Array(state.windows.keys) {
                    state.windows[key]?.expire(now: now)
                    let seen = state.windows[key]?.seen.count ?? 0
                    if seen == 0 { state.drop(key) }
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

    /// The account's windows, made (and kept in `tokens`) when it has none.
    private static func windows(of token: String, in tokens: inout [String: AccountWindows]) -> AccountWindows {
        if let found = tokens[token] { return found }
        let made = AccountWindows()
        tokens[token] = made
        return made
    }
}
