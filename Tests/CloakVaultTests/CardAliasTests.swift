import CloakCore
import CloakCrypto
import Foundation
import Testing

@testable import CloakVault

/// Card FPE formats: FPE_SIX_T_FOUR, FPE_T_FOUR and PFPT keep length, separators and last four
/// (BIN too for SIX_T_FOUR; PFPT starts with 99) and follow the Luhn setting.
@Suite struct CardAliasTests {
    static let cards = [
        "4111 1111 1111 1111",  // Visa 16, spaces
        "5555-5555-5555-4444",  // Mastercard, dashes
        "378282246310005",  // Amex 15: FPE_SIX_T_FOUR keeps only five free digits
        "3782 822463 10005",  // Amex as typed
        "6011.1111.1111.1117",  // Discover, dots
        "30569309025904",  // Diners 14
        "4222222222222",  // Visa 13
        "123456789012",  // 12 digits, the shortest a card format takes
        "6759649826438453",  // Maestro 16
        "6011/0009/9013/9424/123",  // 19 digits, slashes
    ]

    static let formats: [AliasFormatName] = [.FPE_SIX_T_FOUR, .FPE_T_FOUR, .PFPT]

    /// Both ways of making an alias: FF1 (token holders) and random draws (anonymous callers).
    @Test(arguments: cards, formats)
    func cardAliasesKeepLengthSeparatorsAndLastFour(_ card: String, _ format: AliasFormatName) throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        let digits = card.filter(\.isNumber)
        for luhnValid in [true, false] {
            for (attempt, random) in [(0, false), (1, false), (2, false), (3, false), (0, true), (0, true), (1, true)] {
                let alias = try generator.alias(
                    for: card, format: format, luhnValid: luhnValid, attempt: attempt,
                    random: random)
                let aliasDigits = alias.filter(\.isNumber)
                #expect(alias.count == card.count)
                #expect(aliasDigits.count == digits.count, "\(alias) has non-digits in the slots")
                for (a, c) in zip(alias, card) where !c.isNumber { #expect(a == c, "separator moved in \(alias)") }
                #expect(aliasDigits.suffix(4) == digits.suffix(4), "last four lost in \(alias)")
                switch format {
                case .FPE_SIX_T_FOUR: #expect(aliasDigits.prefix(6) == digits.prefix(6), "BIN lost in \(alias)")
                case .PFPT: #expect(aliasDigits.hasPrefix("99"), "\(alias) does not start with 99")
                default: break
                }
                #expect(passesLuhn(aliasDigits) == luhnValid, "\(alias): Luhn should be \(luhnValid)")
                #expect(aliasDigits != digits)
            }
        }
    }

    /// Anonymous aliases are uniform draws: over many draws every free digit position takes
    /// every digit, and no alias repeats (10^5 Luhn-valid candidates for a 16-digit card).
    @Test func randomCardAliasesSpreadOverTheFreeDigits() throws {
        let generator = try AliasGenerator(environment: "sandbox", ff1Key: .random())
        var seen = Set<String>()
        var digitsAt = [Set<Character>](repeating: [], count: 16)
        for _ in 0..<400 {
            let alias = try generator.alias(
                for: "4111111111111111", format: .FPE_SIX_T_FOUR, luhnValid: true,
                attempt: 0, random: true)
            seen.insert(alias)
            for (i, c) in alias.enumerated() { digitsAt[i].insert(c) }
        }
        #expect(seen.count >= 390, "\(seen.count) distinct aliases of 400")
        for i in 6..<12 { #expect(digitsAt[i].count == 10, "position \(i) took only \(digitsAt[i].sorted())") }
        for i in Array(0..<6) + Array(12..<16) { #expect(digitsAt[i].count == 1, "kept position \(i) moved") }
    }

    @Test(arguments: formats)
    func cardAliasesAreLuhnValidByDefault(_ format: AliasFormatName) throws {
        #expect(AliasRequest(value: "4111111111111111", format: format, storage: .persistent).luhnValid)
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            for card in Self.cards {
                let alias = try vault.alias(card, format)
                #expect(passesLuhn(alias.filter(\.isNumber)), "\(alias)")
            }
        }
    }

    @Test func luhnInvalidIsHonouredThroughTheVault() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            for card in Self.cards {
                let alias = try vault.alias(card, .FPE_SIX_T_FOUR, luhnValid: false)
                #expect(!passesLuhn(alias.filter(\.isNumber)), "\(alias)")
                #expect(alias.filter(\.isNumber).prefix(6) == card.filter(\.isNumber).prefix(6))
            }
        }
    }

    /// A 12-digit card keeps BIN and last four, leaving two free digits: 100 candidates of which
    /// ten pass Luhn. Fifteen cards sharing BIN 411111 and last four 1111 compete for those ten.
    @Test func aFullLuhnValidSpaceNeverIssuesALuhnInvalidAlias() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            var issued: [String] = []
            var refused = 0
            for middle in 0..<15 {
                let card = "4111 11\(String(format: "%02d", middle)) 1111"
                switch try vault.createSync([AliasRequest(value: card, format: .FPE_SIX_T_FOUR, storage: .persistent)])
                {
                case let .success(records): issued.append(records.first?.aliases.first?.alias ?? "<none>")
                case .failure(.unavailable): refused += 1
                case let .failure(error): Issue.record("\(card): \(error)")
                }
            }
            let invalid = issued.filter { !passesLuhn($0.filter(\.isNumber)) }
            #expect(invalid.isEmpty, "Luhn-invalid aliases issued for Luhn-valid requests: \(invalid)")
            #expect(Set(issued).count == issued.count, "an alias issued twice: \(issued.sorted())")
            #expect(issued.count <= 10)
            #expect(refused >= 5)
        }
    }

    /// The same space: ten cards (none of them one of the ten Luhn-valid candidates) take the ten
    /// Luhn-valid aliases, then the card whose free digits are 00 asks. It must be refused or get
    /// a Luhn-valid alias, never the card number itself.
    @Test func aFullSpaceNeverIssuesTheCardNumberAsItsOwnAlias() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            for middle in [1, 2, 3, 4, 5, 6, 7, 8, 10, 11] {
                _ = try vault.createSync([
                    AliasRequest(
                        value: "4111 11\(String(format: "%02d", middle)) 1111",
                        format: .FPE_SIX_T_FOUR, storage: .persistent)
                ])
            }
            let card = "4111 1100 1111"
            let result = try vault.createSync([AliasRequest(value: card, format: .FPE_SIX_T_FOUR, storage: .persistent)]
            )
            if case let .success(records) = result {
                let alias = records.first?.aliases.first?.alias
                #expect(alias != card, "the card number was issued as its own alias")
                #expect(passesLuhn(alias?.filter(\.isNumber) ?? ""), "Luhn-invalid alias \(alias ?? "")")
            } else {
                #expect(result.failure?.isUnavailable == true, "\(result)")
            }
        }
    }
}
