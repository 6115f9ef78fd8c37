import CloakCore
import CloakCrypto
import CloakVault
import Testing

extension AliasStoreCompatSuite {
    // MARK: Groups (issue 76)

    /// A group of `members`, its body random bytes (the store never reads it).
    static func group(_ id: String, members: [String], keyID: String = "k1") -> StoredGroup {
        StoredGroup(
            id: id, keyID: keyID,
            sealed: AESGCM.SealedBox(
                nonce: SecureRandom.bytes(12), ciphertext: SecureRandom.bytes(40), tag: SecureRandom.bytes(16)),
            createdAt: now, members: members)
    }

    /// Letters unique to one run of a case: a shared database holds other runs' rows.
    static func runTag() -> String {
        String(decoding: SecureRandom.bytes(8).map { UInt8(ascii: "a") + $0 % 26 }, as: UTF8.self)
    }

    func groupsAreStoredWithTheirMembersAndGoWithTheirRecords() throws {
        let store = try makeStore()
        let run = Self.runTag()
        let records = (0..<3).map { Self.record("rec_g\(run)\($0)", aliases: [Self.alias("tok_g\(run)\($0)")]) }
        let first = Self.group("grp_\(run)a", members: [records[0].id, records[1].id])
        // One record in two groups; a member named twice is indexed once.
        let second = Self.group("grp_\(run)b", members: [records[1].id, records[2].id, records[2].id])
        try transaction(store) {
            for record in records { try store.insert(record) }
            // Several at once (an import batch's: one statement on a server).
            try store.insertGroups([first, second])
        }
        let page = try store.groups(after: "grp_\(run)", limit: 2)
        #expect(page == [first, second])
        #expect(page.map { $0.members.count } == [2, 2])
        #expect(try store.groups(after: first.id, limit: 10).first == second)
        // Without the index (a rows export believes the bodies): the same rows, no members.
        let bodies = try store.groups(after: "grp_\(run)", limit: 2, withMembers: false)
        #expect(bodies.map(\.id) == [first.id, second.id] && bodies.allSatisfy(\.members.isEmpty))
        #expect(
            bodies.map(\.sealed) == [first.sealed, second.sealed] && bodies.map(\.createdAt) == page.map(\.createdAt))
        #expect(try store.groups(ofRecord: records[1].id) == [first, second])
        #expect(try store.groups(ofRecord: records[0].id) == [first])
        #expect(try store.groupCount() >= 2)
        // A page's members in one read, with their aliases; which records are grouped, by when.
        let members = try store.groupMembers([first.id, second.id])
        #expect(Set(members.keys) == Set(records.map(\.id)))
        #expect(members[records[2].id]?.aliases == records[2].aliases)
        #expect(try store.groupMembers([first.id])[records[2].id] == nil)
        let ids = records.map(\.id) + ["rec_g\(run)none"]
        #expect(try store.groupedRecords(ids, asOf: Self.now) == Set(records.map(\.id)))
        #expect(try store.groupedRecords(ids, asOf: Self.now - 1).isEmpty)

        // Rolled back with the transaction that wrote it.
        let undone = Self.group("grp_\(run)c", members: [records[0].id])
        try store.begin()
        try store.insertGroup(undone)
        store.rollback()
        #expect(try store.groups(ofRecord: records[0].id) == [first])

        // A member that is no record fails the write: a group never names nothing.
        try store.begin()
        #expect(throws: StoreError.self) {
            try store.insertGroup(Self.group("grp_\(run)d", members: ["rec_g\(run)missing"]))
        }
        store.rollback()
        try store.begin()
        #expect(throws: StoreError.self) {
            try store.insertGroups([
                Self.group("grp_\(run)e", members: [records[0].id]),
                Self.group("grp_\(run)f", members: ["rec_g\(run)missing"]),
            ])
        }
        store.rollback()
        #expect(try store.groups(ofRecord: records[0].id) == [first])

        // A record deleted (its last alias) leaves its groups, which keep their other members
        // (what the group's body says is the export's to read).
        try transaction(store) { _ = try store.deleteAlias("tok_g\(run)1") }
        #expect(try store.groups(ofRecord: records[1].id).isEmpty)
        #expect(try store.groups(after: "grp_\(run)", limit: 2).map(\.members) == [[records[0].id], [records[2].id]])
    }

    func groupsAreCountedByKeyVersionAndResealedAsRead() throws {
        let store = try makeStore()
        let run = Self.runTag()
        let key = "kg\(run)"
        let record = Self.record("rec_h\(run)", aliases: [Self.alias("tok_h\(run)")])
        let groups = (0..<3).map { Self.group("grp_h\(run)\($0)", members: [record.id], keyID: key) }
        try transaction(store) {
            try store.insert(record)
            for group in groups { try store.insertGroup(group) }
        }
        #expect(try store.keyUseCounts()[key] == [.groups: 3])
        #expect(try store.recordCounts()[key] == 3)
        let read = try store.sealedGroups(keyID: key, after: nil, limit: 2)
        #expect(read.map(\.id) == [groups[0].id, groups[1].id])
        #expect(try store.sealedGroups(keyID: key, after: read.last?.id, limit: 2).map(\.id) == [groups[2].id])
        let fresh = SealedRecord(
            id: read[0].id, keyID: "\(key)new",
            sealed: AESGCM.SealedBox(
                nonce: SecureRandom.bytes(12), ciphertext: SecureRandom.bytes(40), tag: SecureRandom.bytes(16)))
        let done = try transaction(store) { () throws -> [Set<String>] in
            [try store.resealGroups([(read[0], fresh)]), try store.resealGroups([(read[0], fresh)])]
        }
        // The second is of a row that changed since it was read: nothing is written twice.
        #expect(done == [[read[0].id], []])
        #expect(try store.keyUseCounts()[key] == [.groups: 2])
        #expect(try store.groups(ofRecord: record.id).first?.sealed == fresh.sealed)
    }
}
