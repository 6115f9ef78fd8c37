import CloakCore
import CloakCrypto
import Testing

@testable import CloakVault

/// One format, a value it takes, and the whole-alias pattern its aliases must match
/// (environment `sandbox`); the pattern spells out what is kept.
struct ShapeCase: Sendable, CustomTestStringConvertible {
    let format: AliasFormatName
    let value: String
    let pattern: String
    /// Whether the alias has the value's length and its separators in place.
    var preservesLayout = true

    var testDescription: String { "\(format.rawValue) of \(value)" }

    static let b58 = "[1-9A-HJ-NP-Za-km-z]"
    static let an = "[0-9A-Za-z]"

    /// The table of Sources/CloakVault/Formats/AliasFormat.swift, one row per format.
    static let all: [ShapeCase] = [
        ShapeCase(
            format: .UUID, value: "any text, even spaces", pattern: "tok_sandbox_\(b58){22}", preservesLayout: false),
        ShapeCase(format: .RAW_UUID, value: "anything", pattern: rawUUIDPattern, preservesLayout: false),
        ShapeCase(
            format: .GENERIC_T_FOUR, value: "acct-9876-ABCD", pattern: "tok_sandbox_\(b58){18}ABCD",
            preservesLayout: false),
        ShapeCase(format: .FPE_SIX_T_FOUR, value: "4111 1111 1111 1111", pattern: "4111 11[0-9]{2} [0-9]{4} 1111"),
        ShapeCase(format: .FPE_T_FOUR, value: "5555-5555-5555-4444", pattern: "[0-9]{4}-[0-9]{4}-[0-9]{4}-4444"),
        ShapeCase(format: .PFPT, value: "4000056655665556", pattern: "99[0-9]{10}5556"),
        ShapeCase(format: .FPE_ACC_NUM_T_FOUR, value: "000123456789", pattern: "[0-9]{8}6789"),
        ShapeCase(format: .FPE_SSN_T_FOUR, value: "123-45-6789", pattern: "[0-9]{3}-[0-9]{2}-6789"),
        ShapeCase(format: .NUM_LENGTH_PRESERVING, value: "1234 5678 90", pattern: "[0-9]{4} [0-9]{4} [0-9]{2}"),
        ShapeCase(format: .FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, value: "GB82-WEST-1234", pattern: "\(an){4}-\(an){4}-1234"),
        ShapeCase(format: .ALPHANUMERIC_LENGTH_PRESERVING, value: "AbC-123_xyz", pattern: "\(an){3}-\(an){3}_\(an){3}"),
        ShapeCase(format: .ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR, value: "AbCdEf-9876", pattern: "\(an){6}-9876"),
        ShapeCase(
            format: .ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR, value: "ABCDEF-ghij-1234",
            pattern: "ABCDEF-\(an){4}-1234"),
        ShapeCase(
            format: .ALPHANUMERIC_SIX_T_FOUR, value: "ABCDEF-ghij-klmn-1234", pattern: "ABCDEF\(an){8}1234",
            preservesLayout: false),
        ShapeCase(format: .ALPHANUMERIC_SSN_T_FOUR, value: "123-45-6789", pattern: "[0-9A-Z]{3}-[0-9A-Z]{2}-6789"),
    ]
}

@Suite struct AliasFormatShapeTests {
    @Test func theTableCoversEveryFormat() {
        #expect(Set(ShapeCase.all.map(\.format)) == Set(AliasFormatName.allCases))
        #expect(AliasFormatName.allCases.count == 15)
    }

    @Test(arguments: ShapeCase.all)
    func aliasesHaveTheFormatsShape(_ shape: ShapeCase) throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        for attempt in 0..<8 {
            let alias = try generator.alias(for: shape.value, format: shape.format, luhnValid: true, attempt: attempt)
            #expect(matches(alias, shape.pattern), "\(alias) does not match \(shape.pattern)")
            #expect(alias != shape.value)
            if shape.preservesLayout {
                #expect(alias.count == shape.value.count)
                for (a, v) in zip(alias, shape.value) where !(v.isLetter || v.isNumber) {
                    #expect(a == v, "separator \(v) moved")
                }
            }
        }
    }

    @Test func aliasesUseTheVaultsEnvironment() throws {
        let generator = try AliasGenerator(environment: "live-eu", ff1Key: .random())
        let uuid = try generator.alias(for: "x", format: .UUID, luhnValid: true, attempt: 0)
        let generic = try generator.alias(for: "abcd1234", format: .GENERIC_T_FOUR, luhnValid: true, attempt: 0)
        #expect(matches(uuid, "tok_live-eu_\(ShapeCase.b58){22}"))
        #expect(matches(generic, "tok_live-eu_\(ShapeCase.b58){18}1234"))
    }

    @Test func randomTokensDifferEveryTime() throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        for format in [AliasFormatName.UUID, .RAW_UUID, .GENERIC_T_FOUR] {
            let aliases = try (0..<50).map { _ in
                try generator.alias(for: "abcd1234", format: format, luhnValid: true, attempt: 0)
            }
            #expect(Set(aliases).count == 50, "\(format.rawValue) repeated a token")
        }
    }

    @Test func rawUUIDsAreVersionFourLowerCase() {
        for _ in 0..<200 {
            let uuid = AliasGenerator.randomUUID()
            #expect(matches(uuid, rawUUIDPattern), "\(uuid)")
        }
    }

    @Test(arguments: [
        (AliasFormatName.ALPHANUMERIC_SSN_T_FOUR, upperAlphanumeric36Characters),
        (.ALPHANUMERIC_LENGTH_PRESERVING, alphanumeric62Characters),
        (.FPE_ALPHANUMERIC_ACC_NUM_T_FOUR, alphanumeric62Characters),
        (.NUM_LENGTH_PRESERVING, digitCharacters),
    ])
    func alphanumericFormatsWriteInTheirAlphabet(_ format: AliasFormatName, _ alphabet: Set<Character>) throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let value = format == .ALPHANUMERIC_SSN_T_FOUR || format == .NUM_LENGTH_PRESERVING ? "987654321" : "zyXW98vu76"
        var seen = Set<Character>()
        for attempt in 0..<300 {
            let alias = try generator.alias(
                for: value, format: format, luhnValid: true, attempt: attempt,
                random: attempt % 2 == 1)
            #expect(alias.count == value.count)
            seen.formUnion(alias)
        }
        #expect(seen.isSubset(of: alphabet), "outside the alphabet: \(seen.subtracting(alphabet))")
        if format == .ALPHANUMERIC_SSN_T_FOUR {
            // Five free characters of 0-9A-Z: upper-case letters do show up, lower-case never.
            #expect(seen.contains { $0.isUppercase })
        }
        if alphabet == alphanumeric62Characters {
            #expect(seen.contains { $0.isUppercase } && seen.contains { $0.isLowercase })
        }
    }

    /// Every format through the real vault: one batch, every alias reveals its value.
    @Test func everyFormatRoundTripsThroughTheVault() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let requests = ShapeCase.all.map { AliasRequest(value: $0.value, format: $0.format, storage: .persistent) }
            let records = try vault.createSync(requests).get()
            try #require(records.count == requests.count)
            for (shape, record) in zip(ShapeCase.all, records) {
                let alias = try #require(record.aliases.first { $0.format == shape.format }?.alias)
                #expect(matches(alias, shape.pattern), "\(shape.format.rawValue): \(alias)")
                #expect(try vault.revealOne(alias)?.value == shape.value)
            }
        }
    }
}

/// Base58 in 32-bit limbs gives the digits of the byte-by-byte long division it replaced.
@Suite struct Base58LimbTests {
    /// The reference: repeated long division of the bytes by 58.
    static func reference(_ bytes: [UInt8], width: Int) -> String {
        var number = bytes
        var digits: [UInt8] = []
        while number.contains(where: { $0 != 0 }) {
            var remainder = 0
            for i in 0..<number.count {
                let value = remainder * 256 + Int(number[i])
                number[i] = UInt8(value / 58)
                remainder = value % 58
            }
            digits.append(Base58.alphabet[remainder])
        }
        while digits.count < width { digits.append(Base58.alphabet[0]) }
        return String(decoding: digits.prefix(width).reversed(), as: UTF8.self)
    }

    @Test func limbsAndLongDivisionAgree() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...24 {
            for width in [0, 1, 18, 22, 40] {
                for _ in 0..<20 {
                    let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    #expect(
                        Base58.encode(bytes, width: width) == Self.reference(bytes, width: width), "\(bytes) \(width)")
                }
                let extremes: [[UInt8]] = [Array(repeating: 0, count: length), Array(repeating: 0xFF, count: length)]
                for bytes in extremes {
                    #expect(Base58.encode(bytes, width: width) == Self.reference(bytes, width: width))
                }
            }
        }
    }
}
