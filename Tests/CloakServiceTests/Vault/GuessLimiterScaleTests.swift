import CloakCore
import Testing

@testable import CloakService
@testable import CloakVault

/// Issue 56: the guess limiter's cost and memory do not grow with what a token did before, and
/// its promise holds exactly however many windows it keeps.
@Suite struct GuessLimiterScaleTests {
    static let second: UInt64 = 1_000_000_000

    /// A tag whose first 64 bits are `n` (the limiter keys on them) and the rest `salt`.
    static func tag(_ n: UInt64, salt: UInt8 = 0) -> GuessTag {
        var mac = [UInt8](repeating: salt, count: 16)
        for i in 0..<8 { mac[i] = UInt8(truncatingIfNeeded: n >> (56 - 8 * UInt64(i))) }
        return GuessTag(mac)
    }

    static func card(bucket: UInt64, value: UInt64) -> GuessBucket {
        GuessBucket(format: .FPE_SIX_T_FOUR, bucket: tag(bucket), value: tag(value, salt: 1), space: 100_000)
    }

    /// A backend aliasing a million distinct cards in the hour, one bucket each, is never
    /// refused; a guesser's values in one bucket among them are refused at the limit, and a
    /// value past the million is refused by the cap. The windows hold less than they are charged,
    /// and at most 32 bytes a window (issue 60: a migration's million cards).
    @Test func aMillionFillerCardsDoNotHideGuessesInOneBucket() throws {
        let limiter = BucketGuessLimiter()
        let t0: UInt64 = 10_000 * Self.second
        let guessed: UInt64 = 1 << 40
        var fillersRefused = 0, guessesAdmitted = 0, guessesRefused: [BucketGuessLimiter.Refusal] = []
        // 999,960 fillers and 50 guesses, one every 20,000 fillers (50 minutes for the lot).
        let fillers: UInt64 = 999_960
        for i in 0..<fillers {
            let now = t0 + i * 3_000_000
            if limiter.admit(token: "backend", [Self.card(bucket: i + 1, value: i)], limit: 30, now: now) != nil {
                fillersRefused += 1
            }
            if i % 20_000 == 0 {
                let guess = Self.card(bucket: guessed, value: i)
                if let refusal = limiter.admit(token: "backend", [guess], limit: 30, now: now) {
                    guessesRefused.append(refusal)
                } else {
                    guessesAdmitted += 1
                }
            }
        }
        #expect(fillersRefused == 0)
        #expect(guessesAdmitted == 30 && guessesRefused.count == 20)
        #expect(guessesRefused.allSatisfy { $0.limit == .valuesPerBucket })
        // The last, 2,940 s in: until the first guess leaves the hour.
        #expect(guessesRefused.last?.retryAfter == 660)
        let windows = Int(fillers) + 1
        #expect(limiter.memoryUsed == (Int(fillers) + 30) * BucketGuessLimiter.entryBytes)
        #expect(limiter.footprint(of: "backend") <= limiter.memoryUsed)
        #expect(limiter.footprint(of: "backend") <= 32 * windows)
        // Ten more make the million; the next is past the cap. Another account is not.
        let late = t0 + 3_000 * Self.second
        let ten = (0..<UInt64(10)).map { Self.card(bucket: (1 << 41) + $0, value: 1) }
        #expect(limiter.admit(token: "backend", ten, limit: 30, now: late) == nil)
        let capped = limiter.admit(token: "backend", [Self.card(bucket: 1 << 42, value: 1)], limit: 30, now: late)
        #expect(capped?.limit == .buckets(1_000_000))
        #expect(limiter.admit(token: "other", [Self.card(bucket: 1 << 42, value: 1)], limit: 30, now: late) == nil)
        // Once the hour has passed, the backend's windows are gone and their memory with them.
        let later = t0 + 3_600 * Self.second + 3_000_000 * 1_000_000
        #expect(limiter.admit(token: "backend", [Self.card(bucket: 1 << 42, value: 1)], limit: 30, now: later) == nil)
        #expect(limiter.memoryUsed == 2 * BucketGuessLimiter.entryBytes)
        #expect(limiter.footprint(of: "backend") < 1 << 20)
    }

    /// `limits.guess_memory_mib` holds all accounts together: past it a value that needs memory
    /// is refused (nothing is forgotten to make room), and once another account's values leave
    /// the hour a sweep gives their memory back, though that account is never asked again.
    @Test func theMemoryBudgetRefusesAndASweepGivesBackWhatLeftTheHour() {
        let limiter = BucketGuessLimiter()
        let budget = 1 << 20
        let t0: UInt64 = 10_000 * Self.second
        var admitted: UInt64 = 0
        while limiter.admit(
            token: "a", [Self.card(bucket: admitted + 1, value: 0)], limit: 30, now: t0, memoryBudget: budget) == nil
        {
            admitted += 1
        }
        #expect(Int(admitted) == budget / BucketGuessLimiter.entryBytes)
        let refused = limiter.admit(
            token: "b", [Self.card(bucket: 1, value: 0)], limit: 30, now: t0, memoryBudget: budget)
        #expect(refused?.limit == .memory(mib: 1))
        // A value the windows hold already needs nothing more: still answered.
        #expect(
            limiter.admit(token: "a", [Self.card(bucket: 1, value: 0)], limit: 30, now: t0, memoryBudget: budget) == nil
        )
        let later = t0 + 3_600 * Self.second
        #expect(
            limiter.admit(token: "b", [Self.card(bucket: 1, value: 0)], limit: 30, now: later, memoryBudget: budget)
                == nil)
        #expect(limiter.memoryUsed == BucketGuessLimiter.entryBytes)
    }

    /// The windows against a plain list of every value recorded, through random records,
    /// give-backs and expiries: the same counts, the same values held, at every step.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func theWindowsAgreeWithAPlainList(seed: UInt64) {
        // A 64-bit LCG's high bits: enough for a model check, the same on every run.
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let windows = GuessWindows()
        var model: [(bucket: UInt64, value: UInt64, second: UInt32)] = []
        var latest: UInt32 = 0
        // Entries stay charged until their hour ends, given back or not.
        var entries: [UInt32] = []
        var now: UInt32 = 100
        for _ in 0..<3_000 {
            let bucket = next() % 5, value = next() % 12
            switch next() % 10 {
            case 0..<6:
                guard !model.contains(where: { $0.bucket == bucket && $0.value == value }) else { break }
                // Clocks read out of order: a record may carry an earlier second than the last.
                let second = now - UInt32(next() % 3)
                windows.record(value, in: bucket, at: second, by: "p\(bucket % 2)")
                latest = max(second, latest)
                model.append((bucket, value, latest))
                entries.append(latest)
            case 6..<8:
                windows.release(value, in: bucket)
                model.removeAll { $0.bucket == bucket && $0.value == value }
            default:
                now += UInt32(next() % 900)
                windows.expire(now: now)
                model.removeAll { now >= $0.second + GuessWindows.hour }
                entries.removeAll { now >= $0 + GuessWindows.hour }
            }
            #expect(windows.held == model.count)
            for b in 0..<UInt64(5) {
                #expect(windows.count(in: b) == model.filter { $0.bucket == b }.count)
                #expect(windows.oldestSecond(in: b) == model.first { $0.bucket == b }?.second)
                for v in 0..<UInt64(12) {
                    #expect(windows.contains(v, in: b) == model.contains { $0.bucket == b && $0.value == v })
                }
            }
            #expect(windows.entries(by: "p0") + windows.entries(by: "p1") == entries.count)
            #expect(windows.entries == entries.count)
        }
    }

    /// A value seen out of order takes the latest second recorded: it is counted a little
    /// longer, never less than an hour.
    @Test func aValueIsCountedForAtLeastAnHour() {
        let windows = GuessWindows()
        windows.record(1, in: 1, at: 10, by: "p")
        windows.record(2, in: 1, at: 5, by: "p")
        windows.expire(now: 3_609)
        #expect(windows.count(in: 1) == 2)
        windows.expire(now: 3_610)
        #expect(windows.count(in: 1) == 0 && windows.isIdle)
    }

    /// A rounding check on the conversion to seconds: recorded rounded up, expired rounded down.
    @Test func secondsRoundTowardsCountingLonger() {
        #expect(BucketGuessLimiter.seconds(1) == (0, 1))
        #expect(BucketGuessLimiter.seconds(2 * Self.second) == (2, 2))
        #expect(BucketGuessLimiter.seconds(2 * Self.second + 1) == (2, 3))
    }
}

/// The windows' own structures (``GuessRecordQueue``, ``GuessWindowTable``) at the sizes where
/// they change shape: records across blocks, tables growing and shrinking, numbers wrapping.
@Suite struct GuessWindowsStructureTests {
    /// Thousands of buckets against a dictionary of every value held, through records,
    /// give-backs and expiries of whole stretches: the table grows past thousands of windows and
    /// shrinks back, the queue fills many blocks and empties, the numbers pass 2^32 (the first
    /// starts 5,000 before it).
    @Test(arguments: [(1, UInt32.max - 5_000), (2, 0), (3, UInt32.max)] as [(UInt64, UInt32)])
    func theWindowsAgreeWithAModelAtScale(seed: UInt64, firstNumber: UInt32) {
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let windows = GuessWindows(firstNumber: firstNumber)
        // Per bucket, its values held in the order recorded and the second each was recorded.
        var model: [UInt64: [(value: UInt64, second: UInt32)]] = [:]
        var entries: [UInt32] = []
        var now: UInt32 = 100
        func check(_ bucket: UInt64) {
            let held = model[bucket] ?? []
            #expect(windows.count(in: bucket) == held.count)
            #expect(windows.oldestSecond(in: bucket) == held.first?.second)
            for v in 0..<UInt64(4) {
                #expect(windows.contains(v, in: bucket) == held.contains { $0.value == v })
            }
        }
        for step in 0..<40_000 {
            // Busy stretches over many buckets, then quiet ones over few.
            let spread: UInt64 = (step / 5_000) % 2 == 0 ? 6_000 : 40
            let bucket = next() % spread, value = next() % 4
            switch next() % 20 {
            case 0..<15:
                guard model[bucket]?.contains(where: { $0.value == value }) != true else { break }
                windows.record(value, in: bucket, at: now, by: "p\(bucket % 3)")
                model[bucket, default: []].append((value, now))
                entries.append(now)
            case 15..<18:
                windows.release(value, in: bucket)
                model[bucket]?.removeAll { $0.value == value }
                if model[bucket]?.isEmpty == true { model[bucket] = nil }
            default:
                now += UInt32(next() % 40)
                windows.expire(now: now)
                for (b, held) in model {
                    let left = held.filter { now < $0.second + GuessWindows.hour }
                    model[b] = left.isEmpty ? nil : left
                }
                entries.removeAll { now >= $0 + GuessWindows.hour }
            }
            check(bucket)
            #expect(windows.held == model.values.reduce(0) { $0 + $1.count })
            #expect(windows.entries == entries.count)
            if step % 4_000 == 0 {
                for b in 0..<UInt64(6_000) { check(b) }
            }
        }
        windows.expire(now: now + GuessWindows.hour)
        #expect(windows.isIdle && windows.held == 0)
        #expect(windows.footprint < 64 << 10)
        for b in 0..<UInt64(6_000) { #expect(windows.count(in: b) == 0) }
    }
}

extension GuessWindowsStructureTests {
    /// A migration's million cards fall a hundred and more into a bucket (a few BINs, a
    /// thousand last fours: `Benchmarks/import.sh`'s file): still at most 32 bytes a value, as
    /// one a bucket; and every value is found.
    @Test(arguments: [8_000, 1_000_000] as [UInt64])
    func aMillionValuesHoldAtMost32BytesEachHoweverTheyFall(buckets: UInt64) {
        let windows = GuessWindows()
        let values: UInt64 = 1_000_000
        for i in 0..<values {
            windows.record(
                i &* 0x9E37_79B9_7F4A_7C15, in: (i % buckets) &* 0xC2B2_AE3D_27D4_EB4F, at: 100, by: "importer")
        }
        #expect(windows.held == Int(values))
        #expect(windows.footprint <= 32 * Int(values))
        for i in stride(from: 0, to: values, by: 997) {
            #expect(windows.contains(i &* 0x9E37_79B9_7F4A_7C15, in: (i % buckets) &* 0xC2B2_AE3D_27D4_EB4F))
        }
        #expect(windows.count(in: 0) == Int(values / buckets))
    }
}
