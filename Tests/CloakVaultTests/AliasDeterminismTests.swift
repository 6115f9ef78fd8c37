import CloakCore
import CloakCrypto
import Testing

@testable import CloakVault

/// FF1 where the free characters give it a domain of at least 1,000,000; random draws below.
@Suite struct AliasDeterminismTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let format: AliasFormatName
        let value: String
        let why: String
        var testDescription: String { "\(format.rawValue) of \(value) (\(why))" }
    }

    static let deterministic: [Case] = [
        Case(format: .FPE_SIX_T_FOUR, value: "4111111111111111", why: "6 free digits"),
        Case(format: .FPE_T_FOUR, value: "378282246310005", why: "11 free digits"),
        Case(format: .PFPT, value: "4111 1111 1111 1111", why: "10 free digits"),
        Case(format: .FPE_ACC_NUM_T_FOUR, value: "1234567890", why: "6 free digits"),
        Case(format: .NUM_LENGTH_PRESERVING, value: "123456", why: "10^6, exactly the minimum"),
        Case(format: .NUM_LENGTH_PRESERVING, value: "1234-5678-9012", why: "12 digits"),
        Case(format: .ALPHANUMERIC_LENGTH_PRESERVING, value: "abcd", why: "62^4"),
        Case(format: .ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR, value: "abcdef1234", why: "62^6"),
        Case(format: .ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR, value: "abcdefghij1234", why: "62^4"),
        Case(format: .ALPHANUMERIC_SIX_T_FOUR, value: "abcdef-ghij-1234", why: "62^4"),
        Case(format: .FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, value: "ab12cd34", why: "62^4"),
        Case(format: .ALPHANUMERIC_SSN_T_FOUR, value: "123-45-6789", why: "36^5"),
    ]

    static let random: [Case] = [
        Case(format: .FPE_SIX_T_FOUR, value: "378282246310005", why: "Amex: 5 free digits"),
        Case(format: .FPE_SIX_T_FOUR, value: "4222222222222", why: "3 free digits"),
        Case(format: .NUM_LENGTH_PRESERVING, value: "123", why: "CVC: 3 digits"),
        Case(format: .NUM_LENGTH_PRESERVING, value: "12345", why: "10^5, just under the minimum"),
        Case(format: .FPE_SSN_T_FOUR, value: "123-45-6789", why: "5 free digits"),
        Case(format: .FPE_ACC_NUM_T_FOUR, value: "123456789", why: "5 free digits"),
        Case(format: .ALPHANUMERIC_LENGTH_PRESERVING, value: "abc", why: "62^3"),
        Case(format: .FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, value: "ab1234", why: "62^2"),
    ]

    @Test(arguments: deterministic)
    func ff1AliasesAreDeterministicForTheSameKeyValueAndAttempt(_ c: Case) throws {
        let key = SymmetricKey.random()
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: key)
        let first = try generator.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0)
        #expect(try generator.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0) == first)
        // A second generator with the same key agrees: nothing but key, value and attempt matter.
        let again = try AliasGenerator(environment: "sandbox", ff1Key: key)
        #expect(try again.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0) == first)
    }

    @Test(arguments: deterministic)
    func ff1AliasesDifferAcrossAttempts(_ c: Case) throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let aliases = try (0..<4).map {
            try generator.alias(for: c.value, format: c.format, luhnValid: true, attempt: $0)
        }
        #expect(Set(aliases).count == aliases.count, "\(aliases)")
    }

    @Test(arguments: deterministic)
    func ff1AliasesDependOnTheKey(_ c: Case) throws {
        let a = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let b = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        #expect(
            try a.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0)
                != b.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0))
    }

    @Test(arguments: random)
    func smallDomainsAreDrawnAtRandom(_ c: Case) throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let aliases = try (0..<30).map { _ in
            try generator.alias(for: c.value, format: c.format, luhnValid: true, attempt: 0)
        }
        #expect(Set(aliases).count > 1, "the same alias 30 times: not random")
        #expect(!aliases.contains(c.value), "an alias equal to the value")
    }

    @Test func aSingleDigitHasNineAliasesNeverItself() throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let aliases = try Set(
            (0..<400).map { _ in
                try generator.alias(for: "7", format: .NUM_LENGTH_PRESERVING, luhnValid: true, attempt: 0)
            })
        #expect(aliases == Set(["0", "1", "2", "3", "4", "5", "6", "8", "9"]))
    }
}
