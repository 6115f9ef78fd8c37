public import CloakCore
import CloakCrypto
public import CloakVault
import Testing

/// The contract every ``AliasStore`` backend must meet, written once and run against each one.
///
/// It lives in the test-support target so that a new store is one more test line. To add a
/// backend, add one parameterised test next to `SQLiteAliasStoreTests.sqliteStoreMeetsTheContract`:
///
/// ```swift
/// @Test(arguments: AliasStoreCompatSuite.Case.allCases)
/// func memoryStoreMeetsTheContract(_ c: AliasStoreCompatSuite.Case) throws {
///     let shared = MemoryAliasStore()
///     try AliasStoreCompatSuite(makeStore: { shared }, reopensSameData: false).run(c)
/// }
/// ```
///
/// Writes are made between `begin()` and `commit()` (and savepoints), as the vault's executor
/// makes them.
public struct AliasStoreCompatSuite {
    public enum Case: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case insertThenLookUpByAliasAndFingerprint
        case recordsWithoutFingerprintAreIndependent
        case aDuplicateAliasIsTakenAcrossRecords
        case addAliasAppendsToTheRecord
        case deleteAliasRemovesTheRecordWithItsLastAlias
        case setClassifiersReplacesThem
        case deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit
        case rollbackToSavepointUndoesOnlyThatRequest
        case rollbackUndoesTheWholeTransaction
        case committedDataSurvivesReopening
        case uncommittedDataDoesNotSurviveReopening
        case pingAnswers
        case pagesListEveryRecordOnceInIdOrder
        case aForcedDurableCommitChangesNoRecord
        case intentsAreStoredAsIntentsAndExpireLikeAnyRecord
        case bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete
        case metadataAndExpiryAreStoredAndChanged

        public var testDescription: String { rawValue }
    }

    /// Makes a store. Called more than once by the durability cases.
    let makeStore: () throws -> any AliasStore
    /// Whether a second store from `makeStore` opens the same data (a durable backend).
    let reopensSameData: Bool

    public init(makeStore: @escaping () throws -> any AliasStore, reopensSameData: Bool = true) {
        self.makeStore = makeStore
        self.reopensSameData = reopensSameData
    }

    public func run(_ c: Case) throws {
        switch c {
        case .insertThenLookUpByAliasAndFingerprint: try insertThenLookUpByAliasAndFingerprint()
        case .recordsWithoutFingerprintAreIndependent: try recordsWithoutFingerprintAreIndependent()
        case .aDuplicateAliasIsTakenAcrossRecords: try aDuplicateAliasIsTakenAcrossRecords()
        case .addAliasAppendsToTheRecord: try addAliasAppendsToTheRecord()
        case .deleteAliasRemovesTheRecordWithItsLastAlias: try deleteAliasRemovesTheRecordWithItsLastAlias()
        case .setClassifiersReplacesThem: try setClassifiersReplacesThem()
        case .deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit: try deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit()
        case .rollbackToSavepointUndoesOnlyThatRequest: try rollbackToSavepointUndoesOnlyThatRequest()
        case .rollbackUndoesTheWholeTransaction: try rollbackUndoesTheWholeTransaction()
        case .committedDataSurvivesReopening: try committedDataSurvivesReopening()
        case .uncommittedDataDoesNotSurviveReopening: try uncommittedDataDoesNotSurviveReopening()
        case .pingAnswers: try makeStore().ping()
        case .pagesListEveryRecordOnceInIdOrder: try pagesListEveryRecordOnceInIdOrder()
        case .aForcedDurableCommitChangesNoRecord: try aForcedDurableCommitChangesNoRecord()
        case .intentsAreStoredAsIntentsAndExpireLikeAnyRecord: try intentsAreStoredAsIntentsAndExpireLikeAnyRecord()
        case .bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete: try bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete()
        case .metadataAndExpiryAreStoredAndChanged: try metadataAndExpiryAreStoredAndChanged()
        }
    }

    /// Forcing a durable commit (twice in one transaction, inside a savepoint) commits and
    /// leaves the records as they were.
    func aForcedDurableCommitChangesNoRecord() throws {
        let store = try makeStore()
        try store.begin()
        try store.insert(Self.record("r-forced", fingerprint: Self.fingerprint(0x5A), aliases: [Self.alias("tok_forced")]))
        try store.commit()
        let before = try store.recordCount()
        try store.begin()
        try store.savepoint()
        try store.forceDurableCommit()
        try store.forceDurableCommit()
        try store.releaseSavepoint()
        try store.commit()
        #expect(try store.recordCount() == before)
        #expect(try store.record(alias: "tok_forced")?.id == "r-forced")
    }

    // MARK: Fixtures


    public static let now: Int64 = 1_700_000_000

    public static func record(_ id: String, fingerprint: [UInt8]? = nil, aliases: [IssuedAlias] = [], storage: StorageKind = .persistent,
                       classifiers: [String] = ["pci"], expiresAt: Int64? = nil, plaintext: [UInt8]? = nil,
                       intent: Bool = false, bucket: [UInt8]? = nil) -> StoredRecord {
        StoredRecord(
            id: id, fingerprint: fingerprint, keyID: "k1",
            sealed: AESGCM.SealedBox(nonce: SecureRandom.bytes(12), ciphertext: plaintext ?? SecureRandom.bytes(16),
                                     tag: SecureRandom.bytes(16)),
            storage: storage, classifiers: classifiers, createdAt: now - 10, expiresAt: expiresAt, aliases: aliases,
            intent: intent, bucket: bucket)
    }

    public static func alias(_ text: String, _ format: AliasFormatName = .UUID) -> IssuedAlias { IssuedAlias(alias: text, format: format) }

    public static func fingerprint(_ seed: UInt8) -> [UInt8] { (0..<32).map { UInt8($0) ^ seed } }

    /// Runs `body` between `begin()` and `commit()`, rolling back when it throws.
    @discardableResult
    func transaction<T>(_ store: any AliasStore, _ body: () throws -> T) throws -> T {
        try store.begin()
        do {
            let result = try body()
            try store.commit()
            return result
        } catch {
            store.rollback()
            throw error
        }
    }

    /// Checks every stored field, and the aliases in the order they were issued.
    func expectSame(_ found: StoredRecord?, _ expected: StoredRecord, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let found else {
            Issue.record("record \(expected.id) not found", sourceLocation: sourceLocation)
            return
        }
        #expect(found.id == expected.id, sourceLocation: sourceLocation)
        #expect(found.fingerprint == expected.fingerprint, sourceLocation: sourceLocation)
        #expect(found.keyID == expected.keyID, sourceLocation: sourceLocation)
        #expect(found.sealed == expected.sealed, sourceLocation: sourceLocation)
        #expect(found.storage == expected.storage, sourceLocation: sourceLocation)
        #expect(found.classifiers == expected.classifiers, sourceLocation: sourceLocation)
        #expect(found.createdAt == expected.createdAt, sourceLocation: sourceLocation)
        #expect(found.expiresAt == expected.expiresAt, sourceLocation: sourceLocation)
        #expect(found.aliases == expected.aliases, sourceLocation: sourceLocation)
        #expect(found.intent == expected.intent, sourceLocation: sourceLocation)
        #expect(found.bucket == expected.bucket, sourceLocation: sourceLocation)
        #expect(found.metadata == expected.metadata, sourceLocation: sourceLocation)
    }

    /// A record's metadata (any text, escapes included) and expiry read back, in pages too (what
    /// `cloak store migrate` copies), and change in place.
    func metadataAndExpiryAreStoredAndChanged() throws {
        let store = try makeStore()
        var record = Self.record("m1", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_m1")], expiresAt: Self.now + 50)
        record.metadata = ["order": "A-17", "note": "quote \" and é and \n"]
        try transaction(store) { try store.insert(record) }
        expectSame(try store.record(alias: "tok_m1"), record)
        #expect(try store.records(after: nil, limit: 10).first { $0.id == "m1" }?.metadata == record.metadata)
        try transaction(store) {
            try store.setRecordMetadata(["order": "B-2"], recordID: "m1")
            try store.setExpiry(nil, recordID: "m1")
        }
        record.metadata = ["order": "B-2"]
        record.expiresAt = nil
        expectSame(try store.record(alias: "tok_m1"), record)
        try transaction(store) {
            try store.setRecordMetadata([:], recordID: "m1")
            try store.setExpiry(Self.now + 1, recordID: "m1")
        }
        #expect(try store.record(alias: "tok_m1")?.metadata == [:])
        #expect(try transaction(store) { try store.deleteExpired(now: Self.now + 1, limit: 10) } == 1)
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
                    try store.insert(Self.record("b\(i)", aliases: [Self.alias("tok_b\(i)")], expiresAt: Self.now + 10 + Int64(i),
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

    /// An anonymous caller's record (an intent) reads back as one, by alias and in pages (what
    /// `cloak store migrate` copies), and the sweep removes it once expired like any record.
    func intentsAreStoredAsIntentsAndExpireLikeAnyRecord() throws {
        let store = try makeStore()
        let intent = Self.record("r-intent", aliases: [Self.alias("tok_intent")], expiresAt: Self.now + 100, intent: true)
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

    // MARK: Cases

    func pagesListEveryRecordOnceInIdOrder() throws {
        let store = try makeStore()
        let ids = (0..<23).map { String(format: "rec_%02d", $0) }.shuffled()
        try transaction(store) {
            for id in ids { try store.insert(Self.record(id, fingerprint: nil, aliases: [Self.alias("tok_\(id)")])) }
        }
        var seen: [String] = []
        var after: String?
        while true {
            let page = try store.records(after: after, limit: 5)
            guard let last = page.last else { break }
            #expect(page.count <= 5)
            #expect(page.allSatisfy { $0.aliases.map(\.alias) == ["tok_\($0.id)"] })
            seen += page.map(\.id)
            after = last.id
        }
        #expect(seen == ids.sorted())
        #expect(try store.recordCount() == 23)
    }

    func insertThenLookUpByAliasAndFingerprint() throws {
        let store = try makeStore()
        let r = Self.record("rec_a", fingerprint: Self.fingerprint(1),
                            aliases: [Self.alias("tok_a"), Self.alias("4111110000001111", .FPE_SIX_T_FOUR)])
        try transaction(store) { try store.insert(r) }
        expectSame(try store.record(alias: "tok_a"), r)
        expectSame(try store.record(alias: "4111110000001111"), r)
        expectSame(try store.record(fingerprint: Self.fingerprint(1)), r)
        #expect(try store.record(alias: "tok_unknown") == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(2)) == nil)
        // An empty ciphertext (an empty value) and no classifiers round-trip too.
        let empty = Self.record("rec_empty", fingerprint: Self.fingerprint(3), aliases: [Self.alias("tok_empty")],
                                classifiers: [], plaintext: [])
        try transaction(store) { try store.insert(empty) }
        expectSame(try store.record(alias: "tok_empty"), empty)
    }

    func recordsWithoutFingerprintAreIndependent() throws {
        let store = try makeStore()
        let a = Self.record("rec_v1", aliases: [Self.alias("123", .NUM_LENGTH_PRESERVING)], storage: .volatile,
                            expiresAt: Self.now + 60)
        let b = Self.record("rec_v2", aliases: [Self.alias("456", .NUM_LENGTH_PRESERVING)], storage: .volatile,
                            expiresAt: Self.now + 60)
        try transaction(store) {
            try store.insert(a)
            try store.insert(b)
        }
        expectSame(try store.record(alias: "123"), a)
        expectSame(try store.record(alias: "456"), b)
    }

    func aDuplicateAliasIsTakenAcrossRecords() throws {
        let store = try makeStore()
        let a = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_same")])
        try transaction(store) { try store.insert(a) }
        try transaction(store) {
            // Another record with the same alias, as the vault does it: inside a savepoint.
            try store.savepoint()
            #expect(throws: StoreError.aliasTaken) {
                try store.insert(Self.record("rec_b", fingerprint: Self.fingerprint(2), aliases: [Self.alias("tok_same")]))
            }
            store.rollbackToSavepoint()
            // The same alias added to a second record, or again to the first.
            try store.insert(Self.record("rec_c", fingerprint: Self.fingerprint(3)))
            #expect(throws: StoreError.aliasTaken) { try store.addAlias(Self.alias("tok_same", .RAW_UUID), toRecord: "rec_c") }
            #expect(throws: StoreError.aliasTaken) { try store.addAlias(Self.alias("tok_same", .RAW_UUID), toRecord: "rec_a") }
        }
        expectSame(try store.record(alias: "tok_same"), a)
        #expect(try store.record(fingerprint: Self.fingerprint(2)) == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(3))?.aliases == [])
    }

    func addAliasAppendsToTheRecord() throws {
        let store = try makeStore()
        var r = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")])
        try transaction(store) {
            try store.insert(r)
            try store.addAlias(Self.alias("411111", .FPE_SIX_T_FOUR), toRecord: "rec_a")
        }
        try transaction(store) { try store.addAlias(Self.alias("99", .PFPT), toRecord: "rec_a") }
        r.aliases += [Self.alias("411111", .FPE_SIX_T_FOUR), Self.alias("99", .PFPT)]
        expectSame(try store.record(alias: "tok_a"), r)
        expectSame(try store.record(alias: "411111"), r)
        expectSame(try store.record(alias: "99"), r)
        expectSame(try store.record(fingerprint: Self.fingerprint(1)), r)
    }

    func deleteAliasRemovesTheRecordWithItsLastAlias() throws {
        let store = try makeStore()
        let r = Self.record("rec_a", fingerprint: Self.fingerprint(1),
                            aliases: [Self.alias("tok_a"), Self.alias("raw_a", .RAW_UUID)])
        try transaction(store) { try store.insert(r) }

        #expect(try transaction(store) { try store.deleteAlias("tok_a") })
        #expect(try store.record(alias: "tok_a") == nil)
        #expect(try store.record(alias: "raw_a")?.aliases == [Self.alias("raw_a", .RAW_UUID)])
        #expect(try store.record(fingerprint: Self.fingerprint(1))?.id == "rec_a", "deleted before its last alias")
        #expect(try transaction(store) { try store.deleteAlias("tok_a") } == false)

        #expect(try transaction(store) { try store.deleteAlias("raw_a") })
        #expect(try store.record(alias: "raw_a") == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(1)) == nil, "kept after its last alias")
        #expect(try transaction(store) { try store.deleteAlias("never_issued") } == false)

        // Both the fingerprint and the aliases are free again.
        let again = Self.record("rec_b", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")])
        try transaction(store) { try store.insert(again) }
        expectSame(try store.record(fingerprint: Self.fingerprint(1)), again)
    }

    func setClassifiersReplacesThem() throws {
        let store = try makeStore()
        var r = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")], classifiers: ["pci"])
        try transaction(store) { try store.insert(r) }
        for classifiers in [["pii", "card:visa", "tier-1_x.y"], [], ["one"]] {
            try transaction(store) { try store.setClassifiers(classifiers, recordID: "rec_a") }
            r.classifiers = classifiers
            expectSame(try store.record(alias: "tok_a"), r)
        }
    }

    func deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit() throws {
        let store = try makeStore()
        let now = Self.now
        // Five expired (one exactly now), two not yet, two persistent.
        let expiries: [Int64] = [now - 3600, now - 60, now - 1, now - 1, now]
        let expired = expiries.enumerated().map { i, e in
            Self.record("rec_x\(i)", aliases: [Self.alias("x\(i)", .NUM_LENGTH_PRESERVING)], storage: .volatile, expiresAt: e)
        }
        let live = [now + 1, now + 3600].enumerated().map { i, e in
            Self.record("rec_l\(i)", aliases: [Self.alias("l\(i)", .NUM_LENGTH_PRESERVING)], storage: .volatile, expiresAt: e)
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
            #expect(try transaction(store) { try store.deleteAlias("x\(i)") } == false, "alias x\(i) outlived its record")
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

    func rollbackToSavepointUndoesOnlyThatRequest() throws {
        let store = try makeStore()
        let a = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")])
        let b = Self.record("rec_b", fingerprint: Self.fingerprint(2), aliases: [Self.alias("tok_b")])
        let c = Self.record("rec_c", fingerprint: Self.fingerprint(3), aliases: [Self.alias("tok_c")])
        try store.begin()
        // Request 1 succeeds.
        try store.savepoint()
        try store.insert(a)
        try store.releaseSavepoint()
        // Request 2 writes a record, an alias to request 1's record and classifiers, then fails.
        try store.savepoint()
        try store.insert(b)
        try store.addAlias(Self.alias("raw_a", .RAW_UUID), toRecord: "rec_a")
        try store.setClassifiers(["changed"], recordID: "rec_a")
        #expect(throws: StoreError.aliasTaken) { try store.addAlias(Self.alias("tok_a", .RAW_UUID), toRecord: "rec_b") }
        store.rollbackToSavepoint()
        // Request 3 succeeds after the failed one.
        try store.savepoint()
        try store.insert(c)
        try store.releaseSavepoint()
        try store.commit()

        expectSame(try store.record(alias: "tok_a"), a)
        #expect(try store.record(alias: "tok_b") == nil)
        #expect(try store.record(alias: "raw_a") == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(2)) == nil)
        expectSame(try store.record(alias: "tok_c"), c)
    }

    func rollbackUndoesTheWholeTransaction() throws {
        let store = try makeStore()
        let kept = Self.record("rec_k", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_k"), Self.alias("raw_k", .RAW_UUID)])
        try transaction(store) { try store.insert(kept) }

        try store.begin()
        try store.savepoint()
        try store.insert(Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")]))
        try store.releaseSavepoint()
        _ = try store.deleteAlias("tok_k")
        try store.setClassifiers(["changed"], recordID: "rec_k")
        try store.addAlias(Self.alias("411111", .FPE_SIX_T_FOUR), toRecord: "rec_k")
        store.rollback()

        #expect(try store.record(alias: "tok_a") == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(1)) == nil)
        expectSame(try store.record(alias: "tok_k"), kept)
        #expect(try store.record(alias: "411111") == nil)
        // The store takes the next transaction normally.
        try transaction(store) { try store.addAlias(Self.alias("411111", .FPE_SIX_T_FOUR), toRecord: "rec_k") }
        #expect(try store.record(alias: "411111")?.id == "rec_k")
    }

    func committedDataSurvivesReopening() throws {
        guard reopensSameData else { return }
        var r = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")], storage: .volatile,
                            classifiers: ["pci", "cvc"], expiresAt: Self.now + 60)
        do {
            let first = try makeStore()
            try transaction(first) {
                try first.insert(r)
                try first.addAlias(Self.alias("123", .NUM_LENGTH_PRESERVING), toRecord: "rec_a")
            }
            r.aliases.append(Self.alias("123", .NUM_LENGTH_PRESERVING))
            // A second instance sees the commit while the first is still open (nothing held in memory only).
            let second = try makeStore()
            expectSame(try second.record(alias: "tok_a"), r)
        }
        // And after both are gone.
        let reopened = try makeStore()
        expectSame(try reopened.record(alias: "123"), r)
        expectSame(try reopened.record(fingerprint: Self.fingerprint(1)), r)
    }

    func uncommittedDataDoesNotSurviveReopening() throws {
        guard reopensSameData else { return }
        do {
            let first = try makeStore()
            try transaction(first) { try first.insert(Self.record("rec_k", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_k")])) }
            try first.begin()
            try first.insert(Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")]))
            // Closed without commit.
        }
        let reopened = try makeStore()
        #expect(try reopened.record(alias: "tok_a") == nil)
        #expect(try reopened.record(alias: "tok_k")?.id == "rec_k")
        // And the store is writable: the abandoned transaction holds no lock.
        try transaction(reopened) { try reopened.insert(Self.record("rec_b", aliases: [Self.alias("tok_b")])) }
    }
}
