import CloakCore
import CloakCrypto
import Foundation
import Testing

@testable import CloakVault

/// VOLATILE records: never deduplicated, gone after `volatileTTLSeconds`.
@Suite struct VaultVolatileTests {
    static let ttl: Int64 = 60

    /// VOLATILE values are never deduplicated: the same CVC twice gets two records and two
    /// aliases, so no table from alias to value can be built by aliasing every CVC.
    @Test func volatileValuesAreNotDeduplicated() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let a = try vault.alias("123", .UUID, .volatile)
            let b = try vault.alias("123", .UUID, .volatile)
            #expect(a != b)
            #expect(try vault.revealOne(a)?.aliases.map(\.alias) == [a])
            #expect(try vault.revealOne(b)?.aliases.map(\.alias) == [b])
            vault.close()
            #expect(try harness.rowCount("records") == 2)
        }
    }

    @Test func volatileAliasesRevealUntilTheirTTLAndNotAfter() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Vault.Settings(volatileTTLSeconds: Int(Self.ttl)))
            let created = harness.clock.now
            let cvc = try vault.alias("737", .NUM_LENGTH_PRESERVING, .volatile)
            let persistent = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)

            harness.clock.advance(by: Self.ttl - 1)
            let record = try #require(try vault.revealOne(cvc))
            #expect(record.value == "737")
            #expect(record.storage == .volatile)
            #expect(record.createdAt == created)

            harness.clock.advance(by: 1)  // exactly created + ttl: expired
            #expect(try vault.revealOne(cvc) == nil)
            let both = try vault.revealSync([cvc, persistent]).get()
            #expect(both[cvc] == nil)
            #expect(both[persistent]?.value == "4111111111111111")

            // An expired alias is not found for delete or classifiers either.
            #expect(try vault.deleteSync(cvc).failure == .notFound)
            #expect(try vault.setClassifiersSync(["x"], alias: cvc).failure == .notFound)

            // PERSISTENT records do not expire.
            harness.clock.advance(by: 10 * 365 * 86_400)
            #expect(try vault.revealOne(persistent)?.value == "4111111111111111")
        }
    }

    /// SPEC §5: expired aliases reveal as 404. Aliasing the same CVC again later must not bring
    /// the old alias back.
    @Test func anExpiredAliasStaysGoneWhenTheValueIsAliasedAgain() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Vault.Settings(volatileTTLSeconds: Int(Self.ttl)))
            let old = try vault.alias("737", .NUM_LENGTH_PRESERVING, .volatile)
            harness.clock.advance(by: Self.ttl)
            #expect(try vault.revealOne(old) == nil)
            let new = try vault.alias("737", .NUM_LENGTH_PRESERVING, .volatile)
            #expect(try vault.revealOne(new)?.value == "737")
            #expect(try vault.revealOne(old) == nil || old == new, "the expired alias \(old) reveals again")
            #expect(old != new, "the expired alias was issued again")
        }
    }

    @Test func theTTLComesFromTheSettings() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Vault.Settings(volatileTTLSeconds: 3600))
            let alias = try vault.alias("123", .NUM_LENGTH_PRESERVING, .volatile)
            harness.clock.advance(by: 3599)
            #expect(try vault.revealOne(alias) != nil)
            harness.clock.advance(by: 1)
            #expect(try vault.revealOne(alias) == nil)
            #expect(Vault.Settings().volatileTTLSeconds == 3600)
        }
    }

    @Test func theExecutorSweepsExpiredRecordsAway() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault(settings: Vault.Settings(volatileTTLSeconds: Int(Self.ttl)))
            let cvc = try vault.alias("737", .NUM_LENGTH_PRESERVING, .volatile)
            let persistent = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            harness.clock.advance(by: Self.ttl)
            #expect(try vault.revealOne(cvc) == nil)

            // The sweep runs when the executor is idle; watch the file through a second connection.
            let inspector = try harness.inspector()
            let deadline = Date().addingTimeInterval(8)
            while try inspector.record(alias: cvc) != nil, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(try inspector.record(alias: cvc) == nil, "the expired record is still stored")
            #expect(try inspector.record(alias: persistent) != nil)
            vault.close()
            #expect(try harness.rowCount("records") == 1)
            #expect(try harness.rowCount("aliases") == 1)
        }
    }
}
