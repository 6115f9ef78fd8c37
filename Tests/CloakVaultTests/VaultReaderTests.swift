import CloakCore
import CloakCrypto
import Testing

@testable import CloakVault

/// ``VaultReader``: reveals on the caller's thread from a read-only connection, with every check
/// the executor's reveal makes, and sees what the writer committed.
@Suite struct VaultReaderTests {
    @Test func aReaderRevealsWhatTheVaultJustStored() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let reader = try #require(vault.makeReader())
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let found = try #require(reader.reveal([alias, "tok_not_there"]))
            #expect(try found.get()[alias]?.value == "4111111111111111")
            #expect(try found.get()["tok_not_there"] == nil)
            // The same answer as the executor's.
            #expect(try vault.revealOne(alias)?.value == "4111111111111111")
        }
    }

    @Test func aDeletedOrExpiredAliasIsNotFound() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let reader = try #require(vault.makeReader())
            let deleted = try vault.alias("4111111111111111", .UUID)
            let volatile = try vault.alias("123", .UUID, .volatile, luhnValid: false)
            #expect(try reader.reveal([volatile])?.get()[volatile]?.value == "123")
            _ = try vault.deleteSync(deleted).get()
            #expect(try reader.reveal([deleted])?.get()[deleted] == nil)
            harness.clock.advance(by: 61)  // past vault.volatile_ttl_s (60 in the harness)
            #expect(try reader.reveal([volatile])?.get()[volatile] == nil)
        }
    }

    @Test func aRepointedAliasRowIsRefusedAsByTheExecutor() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let victim = try vault.alias("4111111111111111", .UUID)
            let attacker = try vault.alias("5555555555554444", .GENERIC_T_FOUR)
            let reader = try #require(vault.makeReader())
            try harness.execute("""
                UPDATE aliases SET record_id = (SELECT record_id FROM aliases WHERE alias = '\(victim)') WHERE alias = '\(attacker)'
                """)
            let result = try #require(reader.reveal([attacker]))
            #expect(result.failure?.isUnavailable == true, "the repointed alias must not reveal the victim's card")
        }
    }

    @Test func aVaultInMemoryHasNoReader() throws {
        let vault = try Vault(store: SQLiteAliasStore(path: ":memory:"), keys: KeyRing.generate(),
                              settings: Vault.Settings(volatileTTLSeconds: 60))
        defer { vault.close() }
        #expect(vault.makeReader() == nil)
    }
}
