import CloakCore
import CloakCrypto
import Testing

@testable import CloakVault

/// `Vault.check`: values a format cannot represent are refused before anything is queued, with a
/// reason naming the format and never the value.
@Suite struct AliasInputValidationTests {
    struct Invalid: Sendable, CustomTestStringConvertible {
        let format: AliasFormatName
        let value: String
        let why: String
        var testDescription: String { "\(format.rawValue): \(why)" }
    }

    static let invalid: [Invalid] = [
        Invalid(format: .FPE_SSN_T_FOUR, value: "12345", why: "an SSN of five characters"),
        Invalid(format: .FPE_SSN_T_FOUR, value: "123-45-67890", why: "an SSN of ten digits"),
        Invalid(format: .ALPHANUMERIC_SSN_T_FOUR, value: "12-345", why: "an SSN of five digits"),
        Invalid(format: .FPE_SSN_T_FOUR, value: "123-45-678A", why: "a letter in an SSN"),
        Invalid(format: .NUM_LENGTH_PRESERVING, value: "12ab", why: "letters for a numeric format"),
        Invalid(format: .NUM_LENGTH_PRESERVING, value: "12_34", why: "a separator digits formats do not take"),
        Invalid(format: .NUM_LENGTH_PRESERVING, value: "", why: "no digit at all"),
        Invalid(format: .FPE_SIX_T_FOUR, value: "123456789", why: "a 9-digit card"),
        Invalid(format: .FPE_T_FOUR, value: "4111 1111 1111 1111 1111", why: "a 20-digit card"),
        Invalid(format: .PFPT, value: "41111111111", why: "an 11-digit card"),
        Invalid(format: .FPE_SIX_T_FOUR, value: "4111 1111 1111 111x", why: "a letter in a card"),
        Invalid(format: .FPE_SIX_T_FOUR, value: "4111 1111 1111 1111\u{00A0}", why: "a non-breaking space"),
        Invalid(format: .FPE_T_FOUR, value: "４１１１１１１１１１１１１１１１", why: "full-width digits"),
        Invalid(format: .ALPHANUMERIC_LENGTH_PRESERVING, value: "José", why: "non-ASCII letters"),
        Invalid(format: .FPE_ACC_NUM_T_FOUR, value: "12345", why: "five digits where six are needed"),
        Invalid(format: .GENERIC_T_FOUR, value: "a-b-1", why: "three letters and digits"),
        Invalid(format: .ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR, value: "abcdefghijk", why: "eleven characters"),
        Invalid(format: .ALPHANUMERIC_SIX_T_FOUR, value: "abc-def", why: "six characters"),
        Invalid(format: .FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, value: "ab-12", why: "four characters"),
        Invalid(format: .NUM_LENGTH_PRESERVING, value: "4111\n1111", why: "a control character"),
    ]

    @Test(arguments: invalid)
    func unrepresentableValuesAreRejectedWithTheirIndex(_ c: Invalid) throws {
        let requests = [
            AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent),
            AliasRequest(value: "123", format: .NUM_LENGTH_PRESERVING, storage: .volatile),
            AliasRequest(value: c.value, format: c.format, storage: .persistent),
        ]
        let error = try #require(throws: VaultError.self) { try Vault.check(requests) }
        guard case let .invalidInput(index, reason) = error else {
            Issue.record("expected invalidInput, got \(error)")
            return
        }
        #expect(index == 2)
        #expect(reason.contains(c.format.rawValue), "the reason does not name the format: \(reason)")
        if c.value.count >= 3 {
            #expect(!reason.contains(c.value), "the reason repeats the value")
            #expect(!error.description.contains(c.value))
        }
    }

    @Test(arguments: invalid)
    func createAliasesRefusesTheSameValuesWithoutWriting(_ c: Invalid) throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let result = try vault.createSync([
                AliasRequest(value: "kept out", format: .UUID, storage: .persistent),
                AliasRequest(value: c.value, format: c.format, storage: .persistent),
            ])
            guard case .invalidInput(index: 1, _)? = result.failure else {
                Issue.record("expected invalidInput at index 1, got \(result)")
                return
            }
            vault.close()
            #expect(try harness.rowCount("records") == 0)
            #expect(try harness.rowCount("aliases") == 0)
        }
    }

    static let valid: [(AliasFormatName, String)] = [
        (.FPE_SIX_T_FOUR, "4111.1111.1111.1111"),
        (.FPE_T_FOUR, "4111/1111/1111/1111"),
        (.FPE_SSN_T_FOUR, "123 45 6789"),
        (.NUM_LENGTH_PRESERVING, "7"),
        (.GENERIC_T_FOUR, "abcd"),
        (.ALPHANUMERIC_LENGTH_PRESERVING, "x"),
        (.ALPHANUMERIC_LENGTH_PRESERVING, "a b!c#d$e%f"),
        (.UUID, ""),
        (.RAW_UUID, "anything at all"),
    ]

    @Test(arguments: valid)
    func representableValuesPass(_ format: AliasFormatName, _ value: String) throws {
        try Vault.check([AliasRequest(value: value, format: format, storage: .persistent)])
    }

    /// AliasFormat.swift's table: UUID and RAW_UUID take "any" input (names with accents, addresses
    /// on several lines), since they keep nothing of it.
    @Test(arguments: [AliasFormatName.UUID, .RAW_UUID], ["José Müller", "Zoë", "1 Main St\nSpringfield", "東京", "😀"])
    func tokenFormatsAcceptAnyText(_ format: AliasFormatName, _ value: String) throws {
        try Vault.check([AliasRequest(value: value, format: format, storage: .persistent)])
    }
}
