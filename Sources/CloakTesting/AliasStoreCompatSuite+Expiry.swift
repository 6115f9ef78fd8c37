import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    func deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit() throws {
        let store = try makeStore()
        let now = Self.now
        // Five expired (one exactly now), two not yet, two persistent.
        let expiries: [Int64] = [now - 3600, now - 60, now - 1, now - 1, now]
        let expired = expiries.enumerated().map { i, e in
            Self.record(
                "rec_x\(i)", aliases: [Self.alias("x\(i)", .NUM_LENGTH_PRESERVING)], storage: .volatile, expiresAt: e)
        }
        let live = [now + 1, now + 3600].enumerated().map { i, e in
            Self.record(
                "rec_l\(i)", aliases: [Self.alias("l\(i)", .NUM_LENGTH_PRESERVING)], storage: .volatile, expiresAt: e)
        }
        let persistent = (0..<2).map { i in
            Self.record("rec_p\(i)", fingerprint: Self.fingerprint(UInt8(i)), aliases: [Self.alias("p\(i)")])
        }
        try transaction(store) { for r in expired + live + persistent { try store.insert(r) } }

        #expect(try transaction(store) { try store.deleteExpired(now: now, limit: 2) } == 2)
        #expect(try transaction(store) { try store.deleteExpired(now: now, limit: 2) } == 2)
        #expect(try transaction(store) { try store.deleteExpired(now: now, limit: 2) } == 1)
        #expect(try transaction(store) { try store.deleteExpired(now: now, limit: 2) } == 0)

        for i in expired.indices {
            #expect(try store.record(alias: "x\(i)") == nil, "expired x\(i) kept")
            #expect(
                try transaction(store) { try store.deleteAlias("x\(i)") } == false, "alias x\(i) outlived its record")
        }
        for (i, r) in live.enumerated() { expectSame(try store.record(alias: "l\(i)"), r) }
        for (i, r) in persistent.enumerated() { expectSame(try store.record(alias: "p\(i)"), r) }
        // An alias of a removed record can be issued again.
        try transaction(store) { try store.addAlias(Self.alias("x0", .NUM_LENGTH_PRESERVING), toRecord: "rec_p0") }
        #expect(try store.record(alias: "x0")?.id == "rec_p0")
        // Later, the rest expire as well; persistent records never do.
        #expect(try transaction(store) { try store.deleteExpired(now: now + 86_400 * 365, limit: 1000) } == 2)
        #expect(try store.record(alias: "p1")?.id == "rec_p1")
    }

    /// An anonymous caller's record (an intent) reads back as one, by alias and in pages (what
    /// `cloak store migrate` copies), and the sweep removes it once expired like any record.
    func intentsAreStoredAsIntentsAndExpireLikeAnyRecord() throws {
        let store = try makeStore()
        let intent = Self.record(
            "r-intent", aliases: [Self.alias("tok_intent")], expiresAt: Self.now + 100, intent: true)
        let kept = Self.record("r-kept", fingerprint: Self.fingerprint(7), aliases: [Self.alias("tok_kept")])
        try transaction(store) {
            try store.insert(intent)
            try store.insert(kept)
        }
        expectSame(try store.record(alias: "tok_intent"), intent)
        expectSame(try store.record(alias: "tok_kept"), kept)
        let page = try store.records(after: nil, limit: 10)
        #expect(page.first { $0.id == "r-intent" }?.intent == true && page.first { $0.id == "r-kept" }?.intent == false)
        #expect(try transaction(store) { try store.deleteExpired(now: Self.now + 99, limit: 10) } == 0)
        #expect(try transaction(store) { try store.deleteExpired(now: Self.now + 100, limit: 10) } == 1)
        #expect(try store.record(alias: "tok_intent") == nil)
        expectSame(try store.record(alias: "tok_kept"), kept)
    }

    /// Places in a bucket are taken up to the limit, one a record; deleting a record (the sweep,
    /// or its last alias) gives its place back, and the earliest expiry is known.
    func bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete() throws {
        let store = try makeStore()
        let bucket = Self.fingerprint(42), other = Self.fingerprint(43)
        let taken = try transaction(store) { () -> [Bool] in
            var out: [Bool] = []
            for i in 0..<3 {
                let ok = try store.reserveBucketSlot(bucket, limit: 2)
                out.append(ok)
                if ok {
                    try store.insert(
                        Self.record(
                            "b\(i)", aliases: [Self.alias("tok_b\(i)")], expiresAt: Self.now + 10 + Int64(i),
                            intent: true, bucket: bucket))
                }
            }
            return out
        }
        #expect(taken == [true, true, false])
        #expect(try transaction(store) { try store.reserveBucketSlot(other, limit: 2) })  // another bucket
        #expect(try store.oldestIntentExpiry(bucket: bucket) == Self.now + 10)
        #expect(try store.oldestIntentExpiry(bucket: Self.fingerprint(99)) == nil)
        // The sweep gives the first place back.
        #expect(try transaction(store) { try store.deleteExpired(now: Self.now + 10, limit: 10) } == 1)
        #expect(try transaction(store) { try store.reserveBucketSlot(bucket, limit: 2) })
        #expect(try !transaction(store) { try store.reserveBucketSlot(bucket, limit: 2) })
        // Deleting a record's last alias gives its place back too.
        #expect(try transaction(store) { try store.deleteAlias("tok_b1") })
        #expect(try transaction(store) { try store.reserveBucketSlot(bucket, limit: 2) })
    }
}
