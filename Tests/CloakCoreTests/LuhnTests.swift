import Testing

@testable import CloakCore

/// Reference §2, `validateWithLuhnAlgorithm`: false under 9 characters or with any non-digit.
@Suite struct LuhnTests {
    @Test(arguments: [
        "4111111111111111", "5555555555554444", "378282246310005", "6011111111111117", "3530111333300000",
        "30569309025904", "6200000000000005", "4222222222222", "000000000", "000000018", "79927398713",
    ])
    func knownValidNumbersPass(number: String) {
        #expect(Luhn.isValid(number))
    }

    @Test(arguments: ["4111111111111112", "5555555555554445", "378282246310006", "79927398710", "000000001"])
    func wrongCheckDigitFails(number: String) {
        #expect(!Luhn.isValid(number))
    }

    @Test(arguments: ["", "0", "18", "0000", "00000000", "4111118", "42424242", "00000018"])
    func fewerThanNineDigitsFailEvenWithAValidChecksum(number: String) {
        #expect(TestLuhn.passes(number) || number.isEmpty)
        #expect(!Luhn.isValid(number))
    }

    @Test(arguments: [
        "4111 1111 1111 1111", "4111-1111-1111-1111", "411111111111111a", "a4111111111111111", " 4111111111111111",
        "4111111111111111\n", "+4111111111111111", "-4111111111111111", "4111111111111111.0",
        "٤١١١١١١١١١١١١١١١",  // Arabic-Indic digits are not digits here
        "４１１１１１１１１１１１１１１１",  // full-width digits
    ])
    func anyNonDigitFails(number: String) {
        #expect(!Luhn.isValid(number))
    }

    /// The SDK's per-digit formula (9 stays 9, else 2d mod 9) is the textbook doubling rule.
    @Test func agreesWithTextbookLuhnOnRandomNumbers() {
        var rng = SeededGenerator(seed: 0x1A4E)
        for _ in 0..<5_000 {
            let length = Int.random(in: 9...19, using: &rng)
            let number = String((0..<length).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
            #expect(Luhn.isValid(number) == TestLuhn.passes(number), "\(number)")
        }
    }

    @Test func everyCheckDigitIsRightForExactlyOneValue() {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        for _ in 0..<200 {
            let body = String((0..<15).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
            let passing = (0...9).filter { Luhn.isValid(body + String($0)) }
            #expect(passing == [TestLuhn.checkDigit(for: body)], "\(body)")
        }
    }

    @Test func luhnRuleUsesLuhnAndItsDefaultError() {
        let rule = LuhnRule()
        #expect(rule.error == "LUHN_ALGORITHM_CHECK_VALIDATION_ERROR")
        #expect(rule.validate("4111111111111111", in: fixedContext))
        #expect(!rule.validate("4111111111111112", in: fixedContext))
        #expect(!rule.validate("00000000", in: fixedContext))
        #expect(LuhnRule(error: "custom").error == "custom")
    }
}
