import CloakCore
import CloakCrypto
import CloakTesting
import Testing

@testable import CloakVault

/// Values stored together form a group (issue 76): one sealed row naming each field's record and
/// alias, written in the commit that stores the values.
@Suite struct VaultGroupTests {
    /// A card, its expiry and its holder's name, each named as a form's fields are.
    static func row(_ card: String = "4111111111111111", expiry: String = "12/29", name: String = "Ada Lovelace")
        -> [AliasRequest]
    {
        func named(_ request: AliasRequest, _ field: String) -> AliasRequest {
            var request = request
            request.groupField = field
            return request
        }
        return [
            named(AliasRequest(value: card, format: .FPE_SIX_T_FOUR, storage: .persistent), "card_number"),
            named(AliasRequest(value: expiry, format: .UUID, storage: .persistent), "exp_date"),
            named(AliasRequest(value: name, format: .UUID, storage: .persistent), "name"),
        ]
    }

    /// The groups that hold the record of `alias`, opened by `vault`.
    static func groups(of alias: String, _ harness: VaultHarness, _ vault: Vault) throws -> [(
        StoredGroup, RecordGroup?
    )] {
        let inspector = try harness.inspector()
        let record = try #require(try inspector.record(alias: alias))
        return try inspector.groups(ofRecord: record.id).map { ($0, vault.open($0)) }
    }

    /// A group's row is a write, so a create of values all stored before still commits one for
    /// a caller who may not reveal (its timing says nothing): no second write is forced for it.
    @Test func aGroupOfStoredValuesCommitsItsOwnWriteAndNoOther() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let createOnly = AliasCaller(mayReveal: false, anonymous: false)
            _ = try vault.createSync(Self.row(), caller: createOnly).get()
            let inspector = try harness.inspector()
            let before = try inspector.metadata(SQLiteAliasStore.durableCommitName)
            let again = try vault.createSync(Self.row(), caller: createOnly).get()  // every value found
            #expect(again.allSatisfy { $0.group == nil })  // a caller who may not reveal sees no group
            #expect(try harness.rowCount("record_groups") == 2)
            #expect(try inspector.metadata(SQLiteAliasStore.durableCommitName) == before)
            // One value found alone forms no group: its commit is made to write.
            _ = try vault.createSync([Self.row()[0]], caller: createOnly).get()
            #expect(try inspector.metadata(SQLiteAliasStore.durableCommitName) != before)
        }
    }

    @Test func valuesNamedTogetherFormOneSealedGroupInTheirOrder() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let answers = try vault.createSync(Self.row()).get()
            let id = try #require(answers.first?.group)
            #expect(id.hasPrefix("grp_") && id.count == 26)
            #expect(answers.allSatisfy { $0.group == id })
            let found = try Self.groups(of: try #require(answers[0].aliases.first?.alias), harness, vault)
            #expect(found.count == 1)
            let (stored, body) = try #require(found.first)
            #expect(stored.id == id)
            let opened = try #require(body)
            #expect(opened.fields.map(\.name) == ["card_number", "exp_date", "name"])
            #expect(opened.fields.map(\.alias.alias) == answers.map { $0.aliases[0].alias })
            let inspector = try harness.inspector()
            for field in opened.fields {
                #expect(try inspector.record(alias: field.alias.alias)?.id == field.recordID)
            }
            #expect(Set(stored.members) == Set(opened.recordIDs))
            // Nothing of a value is in the row's clear columns, nor in its index.
            #expect(try harness.rowCount("record_groups") == 1)
            #expect(try harness.rowCount("group_members") == 3)
        }
    }

    @Test func aCallerWhoMayNotRevealIsNeverShownTheGroupButItIsStored() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let answers = try vault.createSync(Self.row(), caller: AliasCaller(mayReveal: false, anonymous: false))
                .get()
            #expect(answers.allSatisfy { $0.group == nil })
            #expect(try harness.rowCount("record_groups") == 1)
        }
    }

    @Test func oneValueAnUnnamedRestOrAnAnonymousCallerFormsNoGroup() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let row = Self.row()
            _ = try vault.createSync([row[0]]).get()
            var unnamed = row
            unnamed[1].groupField = nil
            unnamed[2].groupField = nil
            _ = try vault.createSync(unnamed).get()
            let anonymous = Self.row("4012888888881881").map { request -> AliasRequest in
                var request = request
                request.format = .UUID
                return request
            }
            let answers = try vault.createSync(anonymous, caller: .anonymous).get()
            #expect(answers.allSatisfy { $0.group == nil })
            #expect(try harness.rowCount("record_groups") == 0)
        }
    }

    @Test func oneRecordBelongsToEveryGroupThatHoldsItsValue() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let first = try vault.createSync(Self.row("4111111111111111", name: "Ada")).get()
            let second = try vault.createSync(Self.row("5555555555554444", name: "Grace")).get()
            #expect(first[0].group != second[0].group)
            // The same expiry: one record, one alias, in both rows.
            #expect(first[1].aliases == second[1].aliases)
            let groups = try Self.groups(of: first[1].aliases[0].alias, harness, vault)
            #expect(Set(groups.map(\.0.id)) == Set([first[0].group, second[0].group].compactMap { $0 }))
            #expect(try harness.rowCount("records") == 5)
        }
    }

    /// A database writer without the key: a body moved to another group, or a member added to
    /// the index, does not put a value into another row.
    @Test func aGroupMovedOrAddedToByADatabaseWriterDoesNotOpenAsIt() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let ada = try vault.createSync(Self.row("4111111111111111", name: "Ada")).get()
            let grace = try vault.createSync(Self.row("5555555555554444", name: "Grace")).get()
            let (adaGroup, graceGroup) = (try #require(ada[0].group), try #require(grace[0].group))
            try harness.execute(
                """
                UPDATE record_groups SET
                    nonce = (SELECT nonce FROM record_groups WHERE id = '\(graceGroup)'),
                    ciphertext = (SELECT ciphertext FROM record_groups WHERE id = '\(graceGroup)'),
                    tag = (SELECT tag FROM record_groups WHERE id = '\(graceGroup)')
                WHERE id = '\(adaGroup)'
                """)
            let inspector = try harness.inspector()
            let moved = try #require(try inspector.group(id: adaGroup))
            #expect(vault.open(moved) == nil)
            // Its time moved past an export's second (to hide it from one): it no longer opens.
            #expect(vault.open(try #require(try inspector.group(id: graceGroup))) != nil)
            try harness.execute("UPDATE record_groups SET created_at = created_at + 60 WHERE id = '\(graceGroup)'")
            #expect(vault.open(try #require(try inspector.group(id: graceGroup))) == nil)
            try harness.execute("UPDATE record_groups SET created_at = created_at - 60 WHERE id = '\(graceGroup)'")
            // An index row the body does not name: the body is what is read.
            let graceCard = try #require(try inspector.record(alias: grace[0].aliases[0].alias))
            let intact = try #require(try inspector.group(id: graceGroup))
            #expect(try #require(vault.open(intact)).recordIDs.contains(graceCard.id))
            let other = try #require(try inspector.record(alias: ada[0].aliases[0].alias))
            try harness.execute(
                "INSERT INTO group_members (record_id, group_id) VALUES ('\(other.id)', '\(graceGroup)')")
            let added = try #require(try inspector.group(id: graceGroup))
            #expect(added.members.contains(other.id))
            #expect(try #require(vault.open(added)).recordIDs.contains(other.id) == false)
        }
    }

    @Test func aRewrapSealsGroupsAgainSoTheOldVersionCanRetire() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let answers = try vault.createSync(Self.row()).get()
            let id = try #require(answers[0].group)
            let old = harness.keys.currentID
            let rotated = harness.keys.rotated()
            let rewrap = KeyRewrap(store: try harness.inspector(), keys: rotated)
            #expect(try harness.inspector().keyUseCounts()[old]?[.groups] == 1)
            var cursor: String?
            repeat { cursor = try rewrap.batch(version: old, after: cursor, limit: 10).next } while cursor != nil
            #expect(try rewrap.pending().first { $0.version == old }?.records == 1)
            repeat { cursor = try rewrap.groupBatch(version: old, after: cursor, limit: 10).next } while cursor != nil
            #expect(try rewrap.pending().isEmpty)
            let reader = try harness.openVault(keys: try rotated.retiring(old))
            let group = try #require(try harness.inspector().group(id: id))
            #expect(group.keyID == rotated.currentID)
            #expect(try #require(reader.open(group)).fields.map(\.name) == ["card_number", "exp_date", "name"])
        }
    }

    @Test func aStoreMigrationCarriesGroupsSealedAndVerifyComparesThem() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let ada = try vault.createSync(Self.row("4111111111111111", name: "Ada")).get()
            _ = try vault.createSync(Self.row("5555555555554444", name: "Grace")).get()
            vault.close()
            let destination = try SQLiteAliasStore(path: harness.directory.path + "/copy.db")
            let migration = StoreMigration(from: try harness.inspector(), to: destination)
            #expect(try migration.run().tallies[.groups] == StoreMigration.Tally(copied: 2, already: 0))
            #expect(try migration.verify() == [])
            #expect(try migration.run().tallies[.groups] == StoreMigration.Tally(copied: 0, already: 2))
            // The copy opens with the same keys, as the same row.
            let copy = try Vault(
                store: SQLiteAliasStore(path: harness.directory.path + "/copy.db"), keys: harness.keys,
                settings: Vault.Settings(volatileTTLSeconds: 60), clock: harness.clock.function)
            defer { copy.close() }
            let id = try #require(ada[0].group)
            let group = try #require(try destination.group(id: id))
            let opened = try #require(copy.open(group))
            #expect(opened.fields.map(\.alias.alias) == ada.map { $0.aliases[0].alias })
            // A group that differs in the copy is named by its id.
            try destination.begin()
            _ = try destination.deleteAlias(ada[2].aliases[0].alias)
            try destination.commit()
            #expect(try migration.verify().contains { $0.hasPrefix("groups: 1 missing or different") })
        }
    }
}
