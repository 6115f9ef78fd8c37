import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService
@testable import CloakVault

/// The distinct-values-per-bucket window of review defect 3, without I/O: the time is passed in.
@Suite struct BucketGuessLimiterTests {
    static let second: UInt64 = 1_000_000_000

    /// Buckets as the vault tags them, from a throwaway key ring (one vault for all the values,
    /// so their tags compare).
    static func buckets(
        _ values: [String], format: AliasFormatName = .FPE_SIX_T_FOUR,
        storage: StorageKind = .persistent
    ) throws -> [[GuessBucket]] {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = "sqlite:\(directory.path)/c.db"
        settings.keys = "file:\(directory.path)/k.json"
        let vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { vault.close() }
        return values.map { vault.guessBuckets([AliasRequest(value: $0, format: format, storage: storage)]) }
    }

    @Test func cardsOfOneBINAndLastFourShareABucketAndOthersDoNot() throws {
        let b = try Self.buckets(["4111111111111111", "4111117960771111", "4111 1179 6077 1111", "5555555555554444"])
            .map { $0.first! }
        #expect(b[0].bucket == b[1].bucket && b[1].bucket == b[2].bucket)
        #expect(b[0].value != b[1].value && b[1].value != b[2].value)
        #expect(b[0].bucket != b[3].bucket)
        #expect(b[0].space == 100_000)
    }

    /// Issue 57: an alias that hides the BIN (the shipped checkout's FPE_T_FOUR) is counted in
    /// the BIN + last-four bucket too, not only in its own bucket of 10^11 (never counted).
    @Test func aCardFormatThatHidesTheBINIsCountedByBINAndLastFour() throws {
        let hidden = try Self.buckets(
            ["4111111111111111", "4111 1179 6077 1111", "4000000000061111"], format: .FPE_T_FOUR)
        let shown = try Self.buckets(["4111111111111111"]).map { $0.first! }
        #expect(hidden.allSatisfy { $0.count == 1 && $0[0].space == 100_000 }, "\(hidden.map { $0.map(\.space) })")
        #expect(hidden[0][0].bucket == hidden[1][0].bucket && hidden[0][0].bucket != hidden[2][0].bucket)
        #expect(hidden[0][0].bucket != shown[0].bucket, "the cross-format bucket, not FPE_SIX_T_FOUR's own")
    }

    @Test func tokenFormatsAreTaggedByShapeAndByWhatAHolderKnowsFromElsewhere() throws {
        // GENERIC_T_FOUR shows the last four: its own bucket, and the digits' last-four bucket.
        let ssn = try Self.buckets(["123-45-6789", "987-65-6789", "123-45-0000"], format: .GENERIC_T_FOUR)
        #expect(ssn.allSatisfy { $0.count == 2 && $0.allSatisfy { $0.space == 100_000 } })
        #expect(ssn[0][0].bucket == ssn[1][0].bucket && ssn[0][0].bucket != ssn[2][0].bucket)
        // A UUID shows nothing, but a holder may know a card's BIN and last four (a receipt) or an
        // SSN's last four: those buckets count too.
        let card = try Self.buckets(["4111111111111111", "4111117960771111"], format: .UUID)
        #expect(
            card[0].contains { $0.space == 100_000 }
                && card[0].first { $0.space == 100_000 }?.bucket == card[1].first { $0.space == 100_000 }?.bucket)
        let uuidSSN = try Self.buckets(["123-45-6789"], format: .UUID)
        #expect(uuidSSN[0].count == 1 && uuidSSN[0][0].space == 100_000)  // its last four and length
        let cvc = try Self.buckets(["123", "456"], format: .UUID)
        #expect(cvc[0].first?.bucket == cvc[1].first?.bucket && cvc[0].first?.space == 1_000)
        // Never deduplicated (VOLATILE in a token format), or too large to search.
        #expect(try Self.buckets(["123"], format: .UUID, storage: .volatile)[0].isEmpty)
        #expect(try Self.buckets(["00012345678901234"], format: .FPE_ACC_NUM_T_FOUR)[0].isEmpty)
    }

    @Test func aWindowCountsDistinctValuesForAnHourPerToken() throws {
        let cards = try Self.buckets(TestCards.cards(4)).map { $0.first! }
        let limiter = BucketGuessLimiter()
        let t0: UInt64 = 1_000 * Self.second
        #expect(limiter.admit(token: "a", Array(cards.prefix(3)), limit: 3, now: t0) == nil)
        // known values
        #expect(limiter.admit(token: "a", Array(cards.prefix(3)), limit: 3, now: t0 + Self.second) == nil)
        let refused = limiter.admit(token: "a", [cards[3]], limit: 3, now: t0 + 600 * Self.second)
        #expect(refused == .init(format: .FPE_SIX_T_FOUR, retryAfter: 3_000))
        #expect(limiter.admit(token: "b", [cards[3]], limit: 3, now: t0) == nil)  // another token
        // An hour after the first three, they have left the window.
        #expect(limiter.admit(token: "a", [cards[3]], limit: 3, now: t0 + 3_600 * Self.second) == nil)
    }

    /// The unnamed path (no bucket worked out) is open while the token's windows, all buckets
    /// together, and its requests under way leave room for every value to miss; then no bucket
    /// can pass the limit however the misses fall.
    @Test func theUnnamedPathIsOpenOnlyWhileEveryValueCouldMiss() throws {
        let cards = try Self.buckets(TestCards.cards(3)).map { $0.first! }
        let limiter = BucketGuessLimiter()
        let t0: UInt64 = 1_000 * Self.second
        #expect(limiter.reserveUnnamed(token: "a", count: 2, limit: 3, now: t0))
        #expect(limiter.reserveUnnamed(token: "a", count: 1, limit: 3, now: t0))
        #expect(!limiter.reserveUnnamed(token: "a", count: 1, limit: 3, now: t0), "three values under way")
        #expect(limiter.reserveUnnamed(token: "b", count: 3, limit: 3, now: t0), "another token")
        // The first request's two values missed: recorded, then its reservation ends.
        #expect(limiter.admit(token: "a", Array(cards.prefix(2)), limit: 3, now: t0, mode: .reserved) == nil)
        limiter.endUnnamed(token: "a", count: 2)
        limiter.endUnnamed(token: "a", count: 1)
        #expect(limiter.reserveUnnamed(token: "a", count: 1, limit: 3, now: t0 + Self.second))
        limiter.endUnnamed(token: "a", count: 1)
        #expect(!limiter.reserveUnnamed(token: "a", count: 2, limit: 3, now: t0 + Self.second), "two misses held")
        // Values under way on the unnamed path hold their places on the per-bucket path too.
        #expect(limiter.reserveUnnamed(token: "c", count: 3, limit: 3, now: t0))
        #expect(limiter.admit(token: "c", [cards[0]], limit: 3, now: t0) != nil, "three values of c under way")
        limiter.endUnnamed(token: "c", count: 3)
        #expect(limiter.admit(token: "c", [cards[0]], limit: 3, now: t0) == nil)
        // The per-bucket path still takes the bucket's last place, and then refuses.
        #expect(limiter.admit(token: "a", [cards[2]], limit: 3, now: t0 + Self.second) == nil)
        // An hour later the misses have left the window.
        #expect(limiter.reserveUnnamed(token: "a", count: 3, limit: 3, now: t0 + 3_601 * Self.second))
    }

    /// Issue 44 item 4: values count per guess account (a minted token's in its minter's), but
    /// the cap holds each presenting token to the values it recorded (issue 56: values, which
    /// is what memory holds; windows before). A token at its cap
    /// is refused, and the refusal names the cap; the account's other tokens are not.
    @Test func valuesCountPerAccountButTheBucketCapIsEachPresentingTokensOwn() throws {
        let oneBucket = try Self.buckets(TestCards.cards(3)).map { $0.first! }  // 411111 ... 1111
        let others = try Self.buckets(["5555555555554444", "6011111111111117", "4012888888881881", "5105105105105100"])
            .map { $0.first! }
        let limiter = BucketGuessLimiter(bucketCap: 2)
        let t0: UInt64 = 1_000 * Self.second
        // The child opens two buckets: its cap.
        #expect(limiter.admit(token: "root", presenter: "child", [oneBucket[0]], limit: 2, now: t0) == nil)
        #expect(limiter.admit(token: "root", presenter: "child", [others[0]], limit: 2, now: t0 + Self.second) == nil)
        let capped = limiter.admit(token: "root", presenter: "child", [others[1]], limit: 2, now: t0 + 2 * Self.second)
        #expect(capped == .init(format: .FPE_SIX_T_FOUR, retryAfter: 3_598, limit: .buckets(2)))
        // Its minter is not locked out: its values go on its own cap. Values still count per
        // account: the bucket the child opened holds the minter's too.
        #expect(limiter.admit(token: "root", [oneBucket[1]], limit: 2, now: t0 + 2 * Self.second) == nil)
        #expect(limiter.admit(token: "root", [others[1]], limit: 2, now: t0 + 2 * Self.second) == nil)
        #expect(limiter.admit(token: "root", [others[2]], limit: 2, now: t0 + 2 * Self.second)?.limit == .buckets(2))
        let full = limiter.admit(token: "root", presenter: "child", [oneBucket[2]], limit: 2, now: t0 + 3 * Self.second)
        #expect(full?.limit == .valuesPerBucket)
        // Once its windows have left the hour, the child opens buckets again.
        let later = t0 + 3_700 * Self.second
        #expect(limiter.admit(token: "root", presenter: "child", [others[3]], limit: 2, now: later) == nil)
    }

    /// Minting more children does not multiply what one account may hold: its minted tokens
    /// share a ceiling of twice the cap, and the root keeps its own cap however full it is.
    @Test func mintedTokensShareOneCeilingAndTheRootKeepsItsCap() throws {
        let cards = [
            "4111111111111111", "5555555555554444", "6011111111111117", "4012888888881881", "5105105105105100",
            "378282246310005", "4000056655665556",
        ]
        let buckets = try Self.buckets(cards).map { $0.first! }
        let limiter = BucketGuessLimiter(bucketCap: 2)
        let t0: UInt64 = 1_000 * Self.second
        // Two children fill the ceiling (four windows), each within its own cap.
        for (i, child) in ["c1", "c1", "c2", "c2"].enumerated() {
            #expect(limiter.admit(token: "root", presenter: child, [buckets[i]], limit: 2, now: t0) == nil)
        }
        // A third child has room under its own cap, none under the ceiling.
        let refused = limiter.admit(token: "root", presenter: "c3", [buckets[4]], limit: 2, now: t0 + Self.second)
        #expect(refused?.limit == .buckets(4))
        // The root opens its own two buckets all the same.
        #expect(limiter.admit(token: "root", [buckets[4]], limit: 2, now: t0 + Self.second) == nil)
        #expect(limiter.admit(token: "root", [buckets[5]], limit: 2, now: t0 + Self.second) == nil)
        // Once the children's windows leave the hour, a child opens buckets again.
        let later = t0 + 3_700 * Self.second
        #expect(limiter.admit(token: "root", presenter: "c3", [buckets[6]], limit: 2, now: later) == nil)
    }

    @Test func aRequestPastTheLimitIsRefusedWholeAndRecordsNothing() throws {
        let cards = try Self.buckets(TestCards.cards(4)).map { $0.first! }
        let limiter = BucketGuessLimiter()
        #expect(limiter.admit(token: "a", cards, limit: 3, now: 1) != nil)
        #expect(limiter.admit(token: "a", Array(cards.prefix(3)), limit: 3, now: 2) == nil)
    }

    @Test(arguments: [BucketGuessLimiter.Mode.report, .reserved])
    func reportingRecordsUpToTheLimitAndReportsWithoutRefusing(mode: BucketGuessLimiter.Mode) throws {
        let cards = try Self.buckets(TestCards.cards(4)).map { $0.first! }
        let limiter = BucketGuessLimiter()
        let report = limiter.admit(token: "a", cards, limit: 3, now: 1, mode: mode)
        #expect(report?.format == .FPE_SIX_T_FOUR && report?.limit == .valuesPerBucket)
        #expect(limiter.admit(token: "a", [cards[3]], limit: 3, now: 2) != nil)  // the three were recorded
    }

    /// Review V, item 1: values only reported (an upstream's answer) are charged to the
    /// presenting token's cap and the node's budget like any other, and past either nothing is
    /// recorded, so one token's answers cannot take the room every other token's values need.
    /// Only a reservation's values, whose room was held before, pass both.
    @Test(arguments: [
        (BucketGuessLimiter.Mode.report, true), (.enforce, true), (.reserved, false),
    ])
    func reportedValuesMeetTheCapAndTheBudget(mode: BucketGuessLimiter.Mode, refused: Bool) throws {
        let cards = try (0..<6).map { try Self.buckets(MultiNodeTests.cards(1, seed: 800 + $0)).first!.first! }
        // The cap: two values a presenting token.
        let capped = BucketGuessLimiter(bucketCap: 2)
        #expect(capped.admit(token: "egress", Array(cards.prefix(2)), limit: 30, now: 1, mode: mode) == nil)
        let pastCap = capped.admit(token: "egress", [cards[2]], limit: 30, now: 2, mode: mode)
        #expect((pastCap?.limit == .buckets(2)) == refused)
        #expect(capped.memoryUsed == (refused ? 2 : 3) * BucketGuessLimiter.entryBytes)
        // The budget: three values' bytes for every account together.
        let budget = 3 * BucketGuessLimiter.entryBytes
        let shared = BucketGuessLimiter()
        #expect(shared.admit(token: "egress", Array(cards.prefix(3)), limit: 30, now: 1, memoryBudget: budget) == nil)
        let pastBudget = shared.admit(
            token: "egress", [cards[3]], limit: 30, now: 2, mode: mode, memoryBudget: budget)
        #expect((pastBudget?.limit == .memory(mib: 0)) == refused)
        #expect(shared.memoryUsed == (refused ? 3 : 4) * BucketGuessLimiter.entryBytes)
    }
}
