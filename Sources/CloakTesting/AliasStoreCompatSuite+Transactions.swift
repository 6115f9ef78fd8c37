import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
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
        let kept = Self.record(
            "rec_k", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_k"), Self.alias("raw_k", .RAW_UUID)])
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
        var r = Self.record(
            "rec_a", fingerprint: Self.fingerprint(1), aliases: [Self.alias("tok_a")], storage: .volatile,
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
            try transaction(first) {
                try first.insert(Self.record("rec_k", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_k")]))
            }
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

    /// Forcing a durable commit (twice in one transaction, inside a savepoint) commits and
    /// leaves the records as they were.
    func aForcedDurableCommitChangesNoRecord() throws {
        let store = try makeStore()
        try store.begin()
        try store.insert(
            Self.record("r-forced", fingerprint: Self.fingerprint(0x5A), aliases: [Self.alias("tok_forced")]))
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

    /// `beginReading()` opens a transaction the executor runs read-only jobs in (reveals,
    /// lookups): it reads what is committed, by alias and by fingerprint, and `commit()` ends it.
    func aReadingTransactionSeesWhatIsCommitted() throws {
        let store = try makeStore()
        let a = Self.record("rec_rd", fingerprint: Self.fingerprint(9), aliases: [Self.alias("tok_rd")])
        try transaction(store) { try store.insert(a) }
        try store.beginReading()
        #expect(store.isInTransaction)
        expectSame(try store.record(alias: "tok_rd"), a)
        expectSame(try store.record(fingerprint: Self.fingerprint(9)), a)
        #expect(try store.record(alias: "tok_none") == nil)
        try store.commit()
        #expect(!store.isInTransaction)
        // A write transaction follows as usual.
        _ = try transaction(store) { try store.deleteAlias("tok_rd") }
        #expect(try store.record(alias: "tok_rd") == nil)
    }
}
