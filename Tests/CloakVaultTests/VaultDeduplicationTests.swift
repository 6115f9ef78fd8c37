import CloakCore
import CloakCrypto
import Testing

@testable import CloakVault

/// PERSISTENT values: one record per value, one alias per format, stable across key rotation.
@Suite struct VaultDeduplicationTests {
    static let formats: [(AliasFormatName, String)] = [
        (.UUID, "alice@example.com"),
        (.RAW_UUID, "alice@example.com"),
        (.FPE_SIX_T_FOUR, "4111 1111 1111 1111"),
        (.FPE_SIX_T_FOUR, "378282246310005"),  // random draw: dedupe must not depend on FF1
        (.NUM_LENGTH_PRESERVING, "123"),
        (.FPE_SSN_T_FOUR, "123-45-6789"),
    ]

    @Test(arguments: formats)
    func theSameValueAndFormatReturnTheSameAlias(_ format: AliasFormatName, _ value: String) throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let first = try vault.alias(value, format)
            #expect(try vault.alias(value, format) == first)
            // Twice in one batch too.
            let request = AliasRequest(value: value, format: format, storage: .persistent)
            let records = try vault.createSync([request, request]).get()
            #expect(records.map { $0.aliases.map(\.alias) } == [[first], [first]])
            vault.close()
            #expect(try harness.rowCount("records") == 1)
            #expect(try harness.rowCount("aliases") == 1)
        }
    }

    @Test func differentValuesGetDifferentAliases() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            #expect(
                try vault.alias("4111111111111111", .FPE_SIX_T_FOUR) != vault.alias("4111111111111112", .FPE_SIX_T_FOUR)
            )
            #expect(try vault.alias("a", .UUID) != vault.alias("b", .UUID))
        }
    }

    @Test func aSecondFormatAddsAnAliasToTheSameRecord() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let card = "4111 1111 1111 1111"
            let fpe = try vault.alias(card, .FPE_SIX_T_FOUR, classifiers: ["pci"])
            let second = try vault.createSync([AliasRequest(value: card, format: .UUID, storage: .persistent)]).get()
            let uuid = try #require(second.first?.aliases.first { $0.format == .UUID }?.alias)
            let expected = [IssuedAlias(alias: fpe, format: .FPE_SIX_T_FOUR), IssuedAlias(alias: uuid, format: .UUID)]
            #expect(second.first?.aliases == expected)
            for alias in [fpe, uuid] {
                let record = try #require(try vault.revealOne(alias))
                #expect(record.value == card)
                #expect(record.aliases == expected)
                #expect(record.classifiers == ["pci"])
                #expect(record.storage == .persistent)
            }
            // Asking again in either format changes nothing.
            #expect(try vault.alias(card, .UUID) == uuid)
            #expect(try vault.alias(card, .FPE_SIX_T_FOUR) == fpe)
            vault.close()
            #expect(try harness.rowCount("records") == 1)
            #expect(try harness.rowCount("aliases") == 2)
        }
    }

    @Test func deduplicationHoldsAcrossKeyRotation() throws {
        try withVaultHarness { harness in
            let card = "5555-5555-5555-4444"
            let before = try harness.openVault()
            let fpe = try before.alias(card, .FPE_SIX_T_FOUR)
            let token = try before.alias("alice", .UUID)
            before.close()

            let rotatedKeys = harness.keys.rotated()
            let after = try harness.openVault(keys: rotatedKeys)
            #expect(try after.alias(card, .FPE_SIX_T_FOUR) == fpe)
            #expect(try after.alias("alice", .UUID) == token)
            // Records sealed with k1 still reveal under a ring whose current key is k2.
            #expect(try after.revealOne(fpe)?.value == card)
            #expect(try after.revealOne(token)?.value == "alice")
            // A new format for an old value joins the old record.
            let pfpt = try after.alias(card, .PFPT)
            #expect(try after.revealOne(fpe)?.aliases.map(\.alias) == [fpe, pfpt])
            // A value first stored after rotation is sealed with k2 and deduplicates as well.
            let fresh = try after.alias("bob", .UUID)
            #expect(try after.alias("bob", .UUID) == fresh)
            #expect(try after.revealOne(fresh)?.value == "bob")
            after.close()

            let records = try harness.inspector()
            #expect(try records.record(alias: fpe)?.keyID == "k1")
            #expect(try records.record(alias: fresh)?.keyID == "k2")
        }
    }

    @Test func persistentAndVolatileCopiesOfAValueAreSeparate() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let persistent = try vault.alias("123", .NUM_LENGTH_PRESERVING, .persistent)
            let volatile = try vault.alias("123", .NUM_LENGTH_PRESERVING, .volatile)
            #expect(persistent != volatile)
            #expect(try vault.revealOne(persistent)?.storage == .persistent)
            #expect(try vault.revealOne(volatile)?.storage == .volatile)
            #expect(try vault.alias("123", .NUM_LENGTH_PRESERVING, .persistent) == persistent)
        }
    }
}
