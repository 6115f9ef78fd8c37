import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: New records in one commit (commitNewRecords)

    func newRecordsAreCommittedAndFoundOnesReadBack() throws {
        let store = try makeStore()
        let old = Self.record("rec_old", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_o1")])
        try transaction(store) {
            try store.insert(old)
            try store.addAlias(Self.alias("tok_o2", .RAW_UUID), toRecord: "rec_old")
        }
        let a = Self.record("rec_a", fingerprint: Self.fingerprint(1))
        let b = Self.record("rec_b", storage: .volatile, expiresAt: Self.now + 60)
        let again = Self.record("rec_again", fingerprint: Self.fingerprint(9))
        let outcomes = try store.commitNewRecords(
            [
                NewRecordWrite(record: a, alias: Self.alias("tok_a")),
                NewRecordWrite(record: b, alias: Self.alias("tok_b", .RAW_UUID)),
                NewRecordWrite(record: again, alias: Self.alias("tok_again")),
            ], durable: false)
        #expect(!store.isInTransaction)
        var withAliases = old
        withAliases.aliases.append(Self.alias("tok_o2", .RAW_UUID))
        #expect(outcomes == [.stored, .stored, .found(withAliases)])
        if case let .found(found) = outcomes[2] { expectSame(found, withAliases) }
        var storedA = a
        storedA.aliases = [Self.alias("tok_a")]
        expectSame(try store.record(alias: "tok_a"), storedA)
        expectSame(try store.record(fingerprint: Self.fingerprint(1)), storedA)
        var storedB = b
        storedB.aliases = [Self.alias("tok_b", .RAW_UUID)]
        expectSame(try store.record(alias: "tok_b"), storedB)
        // Nothing was written for the value stored before.
        #expect(try store.record(alias: "tok_again") == nil)
        #expect(try store.recordCount() == 3)
        // The store takes the next job as ever.
        try transaction(store) { try store.insert(Self.record("rec_c", aliases: [Self.alias("tok_c")])) }
        #expect(try store.recordCount() == 4)
    }

    func aNewRecordsBatchSkipsOnlyTheWritesThatCannotBeMade() throws {
        let store = try makeStore()
        try transaction(store) { try store.insert(Self.record("rec_y", aliases: [Self.alias("tok_taken")])) }
        let outcomes = try store.commitNewRecords(
            [
                // Its alias is another record's: the record is stored, without an alias.
                NewRecordWrite(
                    record: Self.record("rec_d", fingerprint: Self.fingerprint(4)), alias: Self.alias("tok_taken")),
                // One value twice: one write is stored, the other skipped and not read back.
                NewRecordWrite(
                    record: Self.record("rec_e", fingerprint: Self.fingerprint(5)), alias: Self.alias("tok_e")),
                NewRecordWrite(
                    record: Self.record("rec_f", fingerprint: Self.fingerprint(5)), alias: Self.alias("tok_f")),
                NewRecordWrite(record: Self.record("rec_g"), alias: Self.alias("tok_g")),
            ], durable: true)
        #expect(outcomes[0] == .storedWithoutAlias)
        #expect(Set([outcomes[1], outcomes[2]].map { "\($0)" }) == ["stored", "notStored"])
        #expect(outcomes[3] == .stored)
        #expect(try store.record(alias: "tok_taken")?.id == "rec_y")
        #expect(try store.record(fingerprint: Self.fingerprint(4))?.aliases == [])
        let winner = outcomes[1] == .stored ? "rec_e" : "rec_f"
        #expect(try store.record(fingerprint: Self.fingerprint(5))?.id == winner)
        #expect(try store.record(alias: winner == "rec_e" ? "tok_f" : "tok_e") == nil)
        #expect(try store.record(alias: "tok_g")?.id == "rec_g")
        #expect(try store.recordCount() == 4)
    }

    func severalAliasesAreReadAtOnce() throws {
        let store = try makeStore()
        var a = Self.record("rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a1")])
        let b = Self.record("rec_b", aliases: [Self.alias("tok_b")])
        try transaction(store) {
            try store.insert(a)
            try store.insert(b)
            try store.addAlias(Self.alias("tok_a2", .RAW_UUID), toRecord: "rec_a")
        }
        a.aliases.append(Self.alias("tok_a2", .RAW_UUID))
        try store.beginReading()
        let found = try store.records(aliases: ["tok_a1", "tok_b", "tok_none", "tok_a2", "tok_a1", ""])
        try store.commit()
        #expect(Set(found.keys) == ["tok_a1", "tok_a2", "tok_b"])
        expectSame(found["tok_a1"], a)
        expectSame(found["tok_a2"], a)
        expectSame(found["tok_b"], b)
        #expect(try store.records(aliases: []).isEmpty)
    }
}
