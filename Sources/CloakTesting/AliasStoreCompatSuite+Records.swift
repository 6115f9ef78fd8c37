import CloakCore
import CloakCrypto
import CloakVault
import Foundation
import Testing

extension AliasStoreCompatSuite {
    // MARK: Cases

    func insertThenLookUpByAliasAndFingerprint() throws {
        let store = try makeStore()
        let r = Self.record(
            "rec_a", fingerprint: Self.fingerprint(1),
            aliases: [Self.alias("tok_a"), Self.alias("4111110000001111", .FPE_SIX_T_FOUR)])
        try transaction(store) { try store.insert(r) }
        expectSame(try store.record(alias: "tok_a"), r)
        expectSame(try store.record(alias: "4111110000001111"), r)
        expectSame(try store.record(fingerprint: Self.fingerprint(1)), r)
        #expect(try store.record(alias: "tok_unknown") == nil)
        #expect(try store.record(fingerprint: Self.fingerprint(2)) == nil)
        // An empty ciphertext (an empty value) and no classifiers round-trip too.
        let empty = Self.record(
            "rec_empty", fingerprint: Self.fingerprint(3), aliases: [Self.alias("tok_empty")],
            classifiers: [], plaintext: [])
        try transaction(store) { try store.insert(empty) }
        expectSame(try store.record(alias: "tok_empty"), empty)
    }

    func recordsWithoutFingerprintAreIndependent() throws {
        let store = try makeStore()
        let a = Self.record(
            "rec_v1", aliases: [Self.alias("123", .NUM_LENGTH_PRESERVING)], storage: .volatile,
            expiresAt: Self.now + 60)
        let b = Self.record(
            "rec_v2", aliases: [Self.alias("456", .NUM_LENGTH_PRESERVING)], storage: .volatile,
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
                try store.insert(
                    Self.record("rec_b", fingerprint: Self.fingerprint(2), aliases: [Self.alias("tok_same")]))
            }
            store.rollbackToSavepoint()
            // The same alias added to a second record, or again to the first.
            try store.insert(Self.record("rec_c", fingerprint: Self.fingerprint(3)))
            #expect(throws: StoreError.aliasTaken) {
                try store.addAlias(Self.alias("tok_same", .RAW_UUID), toRecord: "rec_c")
            }
            #expect(throws: StoreError.aliasTaken) {
                try store.addAlias(Self.alias("tok_same", .RAW_UUID), toRecord: "rec_a")
            }
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
        let r = Self.record(
            "rec_a", fingerprint: Self.fingerprint(1),
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
        var r = Self.record(
            "rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")], classifiers: ["pci"])
        try transaction(store) { try store.insert(r) }
        for classifiers in [["pii", "card:visa", "tier-1_x.y"], [], ["one"]] {
            try transaction(store) { try store.setClassifiers(classifiers, recordID: "rec_a") }
            r.classifiers = classifiers
            expectSame(try store.record(alias: "tok_a"), r)
        }
    }

    /// A record's metadata (any text, escapes included) and expiry read back, in pages too (what
    /// `cloak store migrate` copies), and change in place.
    func metadataAndExpiryAreStoredAndChanged() throws {
        let store = try makeStore()
        var record = Self.record(
            "m1", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_m1")], expiresAt: Self.now + 50)
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

    /// An export's count reads listings (issue 76): the same pages as ``AliasStore/records(after:limit:)``,
    /// each record's selection fields and aliases (in issue order, MACs kept), a record without
    /// aliases included, and nothing of the value.
    func listingsArePagesOfRecordsWithoutTheirValues() throws {
        let store = try makeStore()
        var records = (0..<11).map { i in
            var record = Self.record(
                String(format: "rec_%02d", i), fingerprint: Self.fingerprint(UInt8(i)),
                aliases: [IssuedAlias(alias: "tok_\(i)", format: .UUID, mac: [UInt8(i), 1])],
                storage: i % 3 == 0 ? .volatile : .persistent, classifiers: i % 2 == 0 ? ["pci", "card"] : [],
                expiresAt: i == 4 ? Self.now + 60 : nil, intent: i == 5)
            record.metadata = i == 6 ? ["order": "A-6", "note": "é \n"] : [:]
            return record
        }
        records[7].aliases.append(IssuedAlias(alias: "4111110000007777", format: .FPE_SIX_T_FOUR, mac: [7, 2]))
        records[7].aliases.append(IssuedAlias(alias: "tok_7_b", format: .RAW_UUID, mac: [7, 3]))
        records[8].aliases = []
        try transaction(store) { for record in records.shuffled() { try store.insert(record) } }
        var listed: [RecordListing] = []
        var after: String?
        while true {
            let page = try store.recordListings(after: after, limit: 4)
            #expect(page.count <= 4)
            #expect(page.map(\.id) == (try store.records(after: after, limit: 4)).map(\.id))
            guard let last = page.last else { break }
            listed += page
            after = last.id
        }
        #expect(listed == records.map(\.listing))
    }
}
