import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: Keys (rotation, re-encryption, the ring, the audit trail)

    /// Records sealed with `keyID`, ids `<prefix>0…`.
    private func insert(_ store: any AliasStore, _ prefix: String, count: Int, keyID: String) throws {
        try transaction(store) {
            for i in 0..<count {
                var record = Self.record("\(prefix)\(i)", aliases: [Self.alias("tok_\(prefix)\(i)")])
                record.keyID = keyID
                try store.insert(record)
            }
        }
    }

    func recordsAreCountedAndPagedByKeyVersion() throws {
        let store = try makeStore()
        try insert(store, "rec_a", count: 5, keyID: "k1")
        try insert(store, "rec_b", count: 2, keyID: "k2")
        #expect(try store.recordCounts() == ["k1": 5, "k2": 2])
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try store.sealedRecords(keyID: "k1", after: cursor, limit: 2)
            #expect(page.count <= 2 && page.allSatisfy { $0.keyID == "k1" })
            seen += page.map(\.id)
            cursor = page.count == 2 ? page.last?.id : nil
        } while cursor != nil
        #expect(seen == (0..<5).map { "rec_a\($0)" })
        #expect(try store.sealedRecords(keyID: "k9", after: nil, limit: 10).isEmpty)
    }

    func aResealAppliesOnlyToTheRowAsItWasRead() throws {
        let store = try makeStore()
        try insert(store, "rec_r", count: 2, keyID: "k1")
        let read = try store.sealedRecords(keyID: "k1", after: nil, limit: 10)
        #expect(read.count == 2)
        let fresh = AESGCM.SealedBox(
            nonce: SecureRandom.bytes(12), ciphertext: SecureRandom.bytes(16), tag: SecureRandom.bytes(16))
        func new(_ old: SealedRecord, _ keyID: String) -> SealedRecord {
            SealedRecord(id: old.id, keyID: keyID, sealed: fresh)
        }
        let outcomes = try transaction(store) { () throws -> [Set<String>] in
            let first = try store.reseal([(read[0], new(read[0], "k2"))])
            // The same read again: the row changed since, so nothing is written twice.
            let again = try store.reseal([(read[0], new(read[0], "k3"))])
            // A deleted record is not brought back.
            _ = try store.deleteAlias("tok_rec_r1")
            let gone = try store.reseal([(read[1], new(read[1], "k2"))])
            return [first, again, gone]
        }
        #expect(outcomes == [["rec_r0"], [], []])
        // Many at once, some stale: only the rows as read change.
        try insert(store, "rec_m", count: 250, keyID: "k1")
        let many = try store.sealedRecords(keyID: "k1", after: "rec_m", limit: 1000)
        #expect(many.count == 250)
        var stale = many[7]
        stale.sealed.nonce = SecureRandom.bytes(12)
        let pairs = many.enumerated().map { i, old in (old: i == 7 ? stale : old, new: new(old, "k2")) }
        let applied = try transaction(store) { try store.reseal(pairs) }
        #expect(applied.count == 249 && !applied.contains(many[7].id))
        #expect(try store.recordCounts() == ["k1": 1, "k2": 250])
        let record = try #require(try store.record(alias: "tok_rec_r0"))
        #expect(record.keyID == "k2" && record.sealed == fresh)
    }

    func theKeyRingIsReplacedOnlyFromWhatWasRead() throws {
        let store = try makeStore()
        let name = "key_ring_test"
        #expect(try store.replaceMetadata(name, expected: nil, with: [1]))
        #expect(try !store.replaceMetadata(name, expected: nil, with: [2]), "a second first write loses")
        #expect(try !store.replaceMetadata(name, expected: [9], with: [3]), "a stale read loses")
        #expect(try store.replaceMetadata(name, expected: [1], with: [4]))
        #expect(try store.metadata(name) == [4])
        // Named values are found by a prefix, taken literally (`_` and `%` are no patterns).
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        for suffix in ["1.aa", "12.bb", "_x"] { try store.setMetadata("t\(tag).table.\(suffix)", []) }
        try store.setMetadata("t\(tag)xtable.3", [])
        #expect(
            Set(try store.metadataNames(prefix: "t\(tag).table.")) == [
                "t\(tag).table.1.aa", "t\(tag).table.12.bb", "t\(tag).table._x",
            ])
        #expect(try store.metadataNames(prefix: "t\(tag).table._") == ["t\(tag).table._x"])
        // A removed value is gone, name and all; removing it again finds nothing.
        #expect(try store.deleteMetadata("t\(tag).table._x"))
        #expect(try !store.deleteMetadata("t\(tag).table._x"))
        #expect(try store.metadataNames(prefix: "t\(tag).table._").isEmpty && store.metadata("t\(tag).table._x") == nil)
    }

    func theKeyAuditTrailKeepsLinesInOrder() throws {
        let store = try makeStore()
        let before = try store.keyAudit(limit: 1000).count
        for i in 0..<3 { try store.appendKeyAudit(#"{"msg":"audit","n":\#(i)}"#, at: Self.now + Int64(i)) }
        let lines = try store.keyAudit(limit: 2)
        #expect(lines == [#"{"msg":"audit","n":1}"#, #"{"msg":"audit","n":2}"#])
        #expect(try store.keyAudit(limit: 1000).count == before + 3)
        let entries = try store.keyAuditEntries(offset: before + 1, limit: 5)
        #expect(entries.map(\.line) == [#"{"msg":"audit","n":1}"#, #"{"msg":"audit","n":2}"#])
        #expect(entries.map(\.at) == [Self.now + 1, Self.now + 2])
    }
}
