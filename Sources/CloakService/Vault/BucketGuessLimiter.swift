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
/// once. Values redacted from an upstream's answer are counted and alerted on past the limit
/// (``Mode/report``: the upstream has acted by then), but like every value they are charged to
/// the presenting token's cap and the node's budget, and refused past those (review V, item 1:
/// an egress token's answers, counted without either, filled the budget every token shares).
///
/// Values are counted per guess account: a token's own id, or for a minted token the root that
/// minted it (minting many tokens does not multiply the limit). State is per account
/// (``GuessWindows``), in shards (one lock per shard, never a global one). A request's cost does
/// not grow with what the account did before: values leave the hour from a time-ordered queue,
/// and the counts the limits read are kept as windows change (issue 56: scanning every window
/// on each request made a backend's 100,000th card cost 17 times its first).
///
/// Memory is bounded by refusing, never by forgetting: no window is evicted, shrunk or merged
/// before its hour ends, so the promise above is exact, across restarts but for the last 10 s
/// a kill -9 can lose (``GuessWindowsKeeper`` keeps a sealed snapshot in the store). Each value recorded is charged to the
/// token whose request recorded it until its hour ends (given back or not), and one token may
/// hold at most ``bucketCap`` (a backend aliasing a million distinct cards an hour, one bucket
/// each, is never refused for volume); past it the token waits until its account's oldest value
/// leaves the hour: only that token, never the other tokens of its account (a minted token
/// cannot lock out its minter). The tokens minted under an account share one more ceiling
/// (``mintedCeiling``, twice the cap): without it, minting more children multiplied the memory
/// one account could hold. All accounts together are held to `limits.guess_memory_mib` (an
/// account holds at most three caps: 366 MiB): past it a value is refused the same way.
/// Values within a reservation (``Mode/reserved``: a lookup's misses, on the unnamed path whose
/// reservation already held their room) are always recorded: refusing to record them would let
/// them go uncounted.
final class BucketGuessLimiter: Sendable {
    /// The most values one presenting token may have counted in the hour (the default
    /// ``bucketCap``): a million cards, one bucket each.
    static let maxBucketsPerToken = 1_000_000
    static let shardCount = 16

    /// What each value recorded is charged until its hour ends. A value holds about 28 bytes
    /// (its 20-byte record, a 4-byte slot of a table at least 37.5 % full as it grows), a run's
    /// 8 bytes more when presenters alternate, and a window of two or more a chain in a
    /// dictionary. Tables, rings and the dictionary shrink once under a quarter full: after a
    /// burst leaves the hour, the values left may hold more than their charge (at worst, two-value
    /// windows of alternating presenters, about half as much again) until they leave too; an
    /// account also holds at most two blocks of records partly.
    /// `GuessLimiterScaleTests` checks the tables never hold more than they are charged.
    static let entryBytes = 128
    /// `limits.guess_memory_mib`'s default, in bytes.
    static let defaultMemoryBudget = 512 << 20

    /// The most values one presenting token may have counted in the hour.
    let bucketCap: Int
    /// The most values of an account the tokens minted under it may have counted, together.
    var mintedCeiling: Int { 2 * bucketCap }

    struct Refusal: Sendable, Equatable {
        /// Which limit refused.
        enum Limit: Sendable, Equatable {
            /// `limits.bucket_values_per_hour`: distinct values of one bucket in the hour.
            case valuesPerBucket
            /// ``BucketGuessLimiter/bucketCap`` or ``BucketGuessLimiter/mintedCeiling`` (the
            /// number): values the presenting token (or its account's minted tokens) counted.
            case buckets(Int)
            /// `limits.guess_memory_mib` (the number): the memory all accounts' windows hold.
            case memory(mib: Int)

            /// How the audit line names it.
            var name: String {
                switch self {
                case .valuesPerBucket: "bucket_values_per_hour"
                case .buckets: "values_per_token"
                case .memory: "guess_memory_mib"
                }
            }
        }

        let format: AliasFormatName
        let retryAfter: Int
        var limit: Limit = .valuesPerBucket
    }

    /// What a value past a limit meets.
    enum Mode: Sendable {
        /// Past any limit the request is refused whole, and nothing is recorded.
        case enforce
        /// Past the bucket limit the values are recorded up to it and the bucket is returned,
        /// for the alert, never refused (an upstream's answer; a reveal holder's create, whose
        /// answer then omits the stored facts); past the presenting token's cap or the node's
        /// budget nothing is recorded and the refusal is returned, as with ``enforce``.
        case report
        /// Recorded up to the bucket limit whatever the cap and the budget: values whose room a
        /// reservation (``reserveUnnamed(token:count:limit:now:)``) already held.
        case reserved
    }

    private final class Shard: Sendable {
        /// Guess accounts' windows; an account without entries or requests under way is dropped
        /// (but an unnamed path's, kept so that a lookup allocates nothing).
        let accounts = Mutex<[String: GuessWindows]>([:])
    }

    private let shards: [Shard] = (0..<BucketGuessLimiter.shardCount).map { _ in Shard() }
    /// What every account's windows are charged together (``entryBytes`` an entry).
    private let used = Atomic<Int>(0)
    /// When all shards were last swept for expired values (``sweep(now:)``), in seconds.
    private let lastSweep = Atomic<UInt64>(0)
    /// Bumped by every change to any account's windows: a snapshot is written only when it moved
    /// (``GuessWindowsKeeper``).
    let generation = Atomic<Int>(0)

    /// - Parameter bucketCap: the most buckets one presenting token may hold windows in.
    init(bucketCap: Int = BucketGuessLimiter.maxBucketsPerToken) {
        self.bucketCap = bucketCap
    }

    /// What all accounts' windows are charged now, in bytes.
    var memoryUsed: Int { used.load(ordering: .relaxed) }

    /// What `token`'s windows hold (``GuessWindows/footprint``), for tests.
    func footprint(of token: String) -> Int {
        withAccount(token, now: nil, keep: true) { $0.footprint }
    }

    static func seconds(until second: UInt32, now: UInt64) -> Int {
        let expiry = (UInt64(second) + UInt64(GuessWindows.hour)) * 1_000_000_000
        guard expiry > now else { return 1 }
        return max(1, Int((expiry - now + 999_999_999) / 1_000_000_000))
    }

    /// `now` (nanoseconds) as the whole second values leave the hour by, and as the second a
    /// value seen now is recorded at (rounded up: it is counted for at least an hour).
    static func seconds(_ now: UInt64) -> (elapsed: UInt32, record: UInt32) {
        let limit = UInt64(UInt32.max - 2 * GuessWindows.hour)
        return (UInt32(min(now / 1_000_000_000, limit)), UInt32(min((now + 999_999_999) / 1_000_000_000, limit)))
    }

    /// Admits the values of one request that `presenter` (nil: the account's own token) made for
    /// the guess account `token` (all or none): nil when every bucket stays within `limit`
    /// distinct values, the presenter within ``bucketCap`` values and all accounts within
    /// `memoryBudget` bytes, else the refusal (the first bucket past the limit, or the cap).
    /// Admitted values are recorded; with ``Mode/report`` or ``Mode/reserved`` every value is
    /// recorded up to the limit and a bucket past it is still returned, for the alert.
    func admit(
        token: String, presenter: String? = nil, _ buckets: [GuessBucket], limit: Int, now: UInt64,
        mode: Mode = .enforce, memoryBudget: Int = BucketGuessLimiter.defaultMemoryBudget
    ) -> Refusal? {
        admitRecording(
            token: token, presenter: presenter, buckets, limit: limit, now: now, mode: mode, memoryBudget: memoryBudget
        ).refusal
    }

    /// ``admit(token:presenter:_:limit:now:mode:memoryBudget:)``, also returning the values it
    /// recorded that the window did not hold before (a reservation ``release(token:_:)`` can give
    /// back).
    func admitRecording(
        token: String, presenter: String? = nil, _ buckets: [GuessBucket], limit: Int, now: UInt64,
        mode: Mode = .enforce, memoryBudget: Int = BucketGuessLimiter.defaultMemoryBudget
    ) -> (refusal: Refusal?, recorded: [GuessBucket]) {
        guard !buckets.isEmpty else { return (nil, []) }
        let first = attempt(
            token: token, presenter: presenter ?? token, buckets, limit: limit, now: now, mode: mode,
            memoryBudget: memoryBudget)
        // Past the budget, values other accounts no longer count may still be charged: sweep
        // them (at most once a second) and try once more.
        guard case .memory = first.refusal?.limit, sweep(now: now) else { return first }
        return attempt(
            token: token, presenter: presenter ?? token, buckets, limit: limit, now: now, mode: mode,
            memoryBudget: memoryBudget)
    }

    private func attempt(
        token: String, presenter: String, _ buckets: [GuessBucket], limit: Int, now: UInt64, mode: Mode,
        memoryBudget: Int
    ) -> (refusal: Refusal?, recorded: [GuessBucket]) {
        let cap = bucketCap, ceiling = mintedCeiling
        let (elapsed, second) = Self.seconds(now)
        return withAccount(token, now: elapsed) { state -> (refusal: Refusal?, recorded: [GuessBucket]) in
            // New values per bucket, in request order.
            var fresh: [UInt64: [UInt64]] = [:]
            var recorded: [GuessBucket] = []
            var refusal: Refusal?
            for b in buckets {
                let bucket = b.bucket.high, value = b.value.high
                if state.contains(value, in: bucket) || fresh[bucket]?.contains(value) == true { continue }
                // Enforcing, the values of the account's requests under way on the unnamed path
                // count too: any of them may miss in this bucket (recorded when they end).
                let underWay = mode == .enforce ? state.inFlight : 0
                if state.count(in: bucket) + (fresh[bucket]?.count ?? 0) + underWay >= limit {
                    if refusal == nil {
                        refusal = Refusal(
                            format: b.format,
                            retryAfter: state.oldestSecond(in: bucket).map { Self.seconds(until: $0, now: now) } ?? 1)
                    }
                    if mode == .enforce { break }
                    continue
                }
                fresh[bucket, default: []].append(value)
                recorded.append(b)
            }
            if mode == .enforce, refusal != nil { return (refusal, []) }
            // Room for the new values: on the presenting token's cap, for a minted token (its
            // presenter is not the account's root) under the ceiling its account's minted tokens
            // share (the values the root did not record), and in the budget. Every mode but a
            // reservation's, whose room was held when it was made.
            let adding = recorded.count
            let over: Refusal.Limit? =
                if mode == .reserved || adding == 0 {
                    nil
                } else if state.entries(by: presenter) + adding > cap {
                    .buckets(cap)
                } else if presenter != token, state.entries - state.entries(by: token) + adding > ceiling {
                    .buckets(ceiling)
                } else if used.load(ordering: .relaxed) + adding * Self.entryBytes > memoryBudget {
                    .memory(mib: memoryBudget >> 20)
                } else {
                    nil
                }
            if let over {
                let oldest = state.oldestSecond.map { Self.seconds(until: $0, now: now) } ?? 1
                return (Refusal(format: buckets[0].format, retryAfter: oldest, limit: over), [])
            }
            for b in recorded { state.record(b.value.high, in: b.bucket.high, at: second, by: presenter) }
            return (refusal, recorded)
        }
    }

    /// Gives back values ``admitRecording(token:presenter:_:limit:now:mode:memoryBudget:)``
    /// recorded (a lookup's hits: only a value not found counts as a guess).
    func release(token: String, _ recorded: [GuessBucket]) {
        guard !recorded.isEmpty else { return }
        generation.add(1, ordering: .relaxed)
        withAccount(token, now: nil) { state in
            for b in recorded { state.release(b.value.high, in: b.bucket.high) }
        }
    }

    /// Reserves room for `count` values without working out their buckets (four HMAC tags a
    /// value): true when the account's windows, all buckets together, and the values of its
    /// requests under way hold at most `limit - count`, so that however these values fall into
    /// buckets none can pass `limit` (nor, holding at most `limit` windows, any cap). A token
    /// that never misses (a backend paying with aliases it holds) stays here; one that guesses
    /// fills its windows and takes the per-bucket path
    /// (``admitRecording(token:presenter:_:limit:now:mode:memoryBudget:)``). End it with
    /// ``endUnnamed(token:count:)``, after recording the misses.
    func reserveUnnamed(token: String, count: Int, limit: Int, now: UInt64) -> Bool {
        withAccount(token, now: Self.seconds(now).elapsed, keep: true) { state in
            guard state.held + state.inFlight + count <= limit else { return false }
            state.inFlight += count
            return true
        }
    }

    /// Ends a reservation of ``reserveUnnamed(token:count:limit:now:)``.
    func endUnnamed(token: String, count: Int) {
        withAccount(token, now: nil, keep: true) { $0.inFlight -= count }
    }

    /// Drops values accounts no longer count (at most ``sweepEntries`` of them), so that their
    /// memory is no longer charged: false (nothing done) when the last sweep was less than a
    /// second ago. An account's values also leave whenever it is asked again; this reaches the
    /// accounts no longer asked, without making one request pay for all of them.
    static let sweepEntries = 100_000

    @discardableResult
    func sweep(now: UInt64) -> Bool {
        let (elapsed, _) = Self.seconds(now)
        let last = lastSweep.load(ordering: .relaxed)
        guard UInt64(elapsed) > last || last == 0,
            lastSweep.compareExchange(expected: last, desired: max(UInt64(elapsed), 1), ordering: .relaxed).exchanged
        else { return false }
        var left = Self.sweepEntries
        for shard in shards where left > 0 {
            shard.accounts.withLock { accounts in
                for (token, state) in accounts where left > 0 {
                    let popped = state.expire(now: elapsed, limit: left)
                    left -= popped
                    used.subtract(popped * Self.entryBytes, ordering: .relaxed)
                    if state.isIdle { accounts[token] = nil }
                }
            }
        }
        return true
    }

    /// Runs `body` on `token`'s windows under its shard's lock, after expiring what left the
    /// hour by `now` (nil: leave them), and charges the change to ``used``. The account is made
    /// when it has none, and dropped after when idle, unless `keep`.
    private func withAccount<T>(
        _ token: String, now: UInt32?, keep: Bool = false, _ body: (GuessWindows) -> T
    ) -> T {
        shards[Int(UInt(bitPattern: token.hashValue) % UInt(Self.shardCount))].accounts.withLock { accounts in
            let state: GuessWindows
            if let found = accounts[token] {
                state = found
            } else {
                state = GuessWindows()
                accounts[token] = state
            }
            let before = state.entries
            if let now { state.expire(now: now) }
            let result = body(state)
            let change = (state.entries - before) * Self.entryBytes
            if change != 0 {
                used.add(change, ordering: .relaxed)
                generation.add(1, ordering: .relaxed)
            }
            if !keep, state.isIdle { accounts[token] = nil }
            return result
        }
    }

    // MARK: Snapshots (review V, item 5)

    /// Every account's records, oldest first, one shard's lock at a time (each account is
    /// whole; accounts are read one after the other, as requests go on).
    func kept() -> [(account: String, records: [GuessWindows.Kept])] {
        var out: [(account: String, records: [GuessWindows.Kept])] = []
        for shard in shards {
            shard.accounts.withLock { accounts in
                for (account, state) in accounts where state.entries > 0 { out.append((account, state.kept())) }
            }
        }
        return out
    }

    /// Replays a snapshot's records into the windows, at their own seconds (``seconds(_:)``'s
    /// clock), oldest first: each recorded (and given back when it was not held), charged to the
    /// budget whatever it holds: a restart must not forget counts to save memory. Records of a
    /// value already held (counted since the start) are skipped. How many it took.
    @discardableResult
    func restore(_ accounts: [(account: String, records: [GuessWindows.Kept])], now: UInt64) -> Int {
        var taken = 0
        let (elapsed, _) = Self.seconds(now)
        for (account, records) in accounts {
            withAccount(account, now: elapsed) { state in
                for kept in records where elapsed < kept.second &+ GuessWindows.hour {
                    guard !state.contains(kept.value, in: kept.bucket) else { continue }
                    state.record(kept.value, in: kept.bucket, at: kept.second, by: kept.presenter)
                    if !kept.held { state.release(kept.value, in: kept.bucket) }
                    taken += 1
                }
            }
        }
        return taken
    }
}
