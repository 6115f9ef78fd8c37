import Testing

@testable import CloakCore

/// Reference §3: the rules, their logic and the SDK's default error strings.
@Suite struct ValidationRuleTests {
    @Test func defaultErrorStringsAreTheSDKs() throws {
        #expect(PatternRule(pattern: try RegexPattern("a")).error == "PATTERN_VALIDATION_ERROR")
        #expect(LengthRule().error == "LENGTH_VALIDATION_ERROR")
        #expect(LengthMatchRule(lengths: [3]).error == "LENGTH_RANGE_MATCH_VALIDATION_ERROR")
        #expect(LuhnRule().error == "LUHN_ALGORITHM_CHECK_VALIDATION_ERROR")
        #expect(PaymentCardRule().error == "CARD_NUMBER_VALIDATION_ERROR")
        #expect(CardExpirationDateRule().error == "EXPIRATION_DATE_VALIDATION_ERROR")
        #expect(DateRangeRule().error == "DATE_VALIDATION_ERROR")
        #expect(ABARoutingNumberRule().error == "ABA_ROUTING_NUMBER_VALIDATION_ERROR")
    }

    @Test func errorStringConstantsAreTheSDKs() {
        #expect(ValidationErrorString.pattern == "PATTERN_VALIDATION_ERROR")
        #expect(ValidationErrorString.length == "LENGTH_VALIDATION_ERROR")
        #expect(ValidationErrorString.lengthMatch == "LENGTH_RANGE_MATCH_VALIDATION_ERROR")
        #expect(ValidationErrorString.expDate == "EXPIRATION_DATE_VALIDATION_ERROR")
        #expect(ValidationErrorString.date == "DATE_VALIDATION_ERROR")
        #expect(ValidationErrorString.cardNumber == "CARD_NUMBER_VALIDATION_ERROR")
        #expect(ValidationErrorString.luhnCheck == "LUHN_ALGORITHM_CHECK_VALIDATION_ERROR")
        #expect(ValidationErrorString.abaRoutingNumber == "ABA_ROUTING_NUMBER_VALIDATION_ERROR")
    }

    @Test func customErrorStringsAreReported() throws {
        let rules: [any ValidationRule] = [
            PatternRule(pattern: try RegexPattern(#"\d+"#), error: "P"), LengthRule(min: 5, error: "L"),
            LengthMatchRule(lengths: [9], error: "M"), LuhnRule(error: "H"), PaymentCardRule(error: "C"),
            CardExpirationDateRule(error: "E"), DateRangeRule(error: "D"), ABARoutingNumberRule(error: "A"),
        ]
        #expect(validationErrors(of: "x", rules: rules, in: fixedContext) == ["P", "L", "M", "H", "C", "E", "D", "A"])
    }

    // MARK: pattern

    @Test(arguments: [
        (#"\d{3}"#, "123", true), (#"\d{3}"#, "1234", false), (#"\d{3}"#, "x123", false), (#"\d{3}"#, "", false),
        ("a|ab", "ab", true), ("a|ab", "a", true), ("a|ab", "abc", false), (#"\d*$"#, "", true),
        (#"\d*$"#, "12\n", false), (#"^\d+$"#, "12\n", false), ("[a-z]+", "abc", true), ("[a-z]+", "abC", false),
        ("(?i)[a-z]+", "abC", true),
    ])
    func patternRuleMatchesTheWholeInput(pattern: String, input: String, valid: Bool) throws {
        #expect(PatternRule(pattern: try RegexPattern(pattern)).validate(input, in: fixedContext) == valid)
    }

    // MARK: length

    @Test(arguments: [("", false), ("a", false), ("ab", true), ("abc", true), ("abcd", true), ("abcde", false)])
    func lengthRuleIsInclusiveAtBothEnds(input: String, valid: Bool) {
        #expect(LengthRule(min: 2, max: 4).validate(input, in: fixedContext) == valid)
    }

    @Test func lengthRuleDefaultsAcceptAnything() {
        #expect(LengthRule().min == 0)
        #expect(LengthRule().max == Int.max)
        #expect(LengthRule().validate("", in: fixedContext))
        #expect(LengthRule().validate(String(repeating: "x", count: 10_000), in: fixedContext))
    }

    @Test func lengthsCountCharactersNotBytes() {
        // Swift `String.count`, as the SDK uses: grapheme clusters.
        #expect(LengthRule(min: 1, max: 1).validate("é", in: fixedContext))
        #expect(LengthRule(min: 1, max: 1).validate("e\u{301}", in: fixedContext))
        #expect(LengthRule(min: 1, max: 1).validate("👍🏽", in: fixedContext))
        #expect(LengthMatchRule(lengths: [2]).validate("😀😀", in: fixedContext))
    }

    @Test(arguments: [("", false), ("12", false), ("123", true), ("1234", true), ("12345", false)])
    func lengthMatchRuleAcceptsOnlyListedLengths(input: String, valid: Bool) {
        #expect(LengthMatchRule(lengths: [3, 4]).validate(input, in: fixedContext) == valid)
    }

    @Test func lengthMatchRuleWithNoLengthsRejectsEverything() {
        #expect(!LengthMatchRule(lengths: []).validate("", in: fixedContext))
        #expect(!LengthMatchRule(lengths: []).validate("123", in: fixedContext))
    }

    // MARK: ABA routing number

    @Test(arguments: [
        "011000015", "021000021", "011401533", "091000019", "111000025", "122105278", "026009593", "000000000",
    ])
    func abaRoutingNumberWithValidChecksumPasses(number: String) {
        #expect(ABARoutingNumberRule().validate(number, in: fixedContext))
    }

    @Test(arguments: [
        "011000016", "021000022", "123456789", "111111111", "01100001", "0110000150", "01100001a", "", "021 000 021",
        "021-000-021", " 21000021", "٠٢١٠٠٠٠٢١", "+21000021",
    ])
    func abaRoutingNumberRejectsBadChecksumsAndNonNineDigitInput(number: String) {
        #expect(!ABARoutingNumberRule().validate(number, in: fixedContext))
    }

    // MARK: rule sets

    @Test func everyFailingRuleReportsInOrder() throws {
        let rules: [any ValidationRule] = [
            PatternRule(pattern: try RegexPattern(#"\d*$"#)), LengthMatchRule(lengths: [3, 4]), LengthRule(max: 1),
        ]
        #expect(
            validationErrors(of: "1a", rules: rules, in: fixedContext)
                == ["PATTERN_VALIDATION_ERROR", "LENGTH_RANGE_MATCH_VALIDATION_ERROR", "LENGTH_VALIDATION_ERROR"])
        #expect(validationErrors(of: "123", rules: rules, in: fixedContext) == ["LENGTH_VALIDATION_ERROR"])
        #expect(validationErrors(of: "1", rules: [], in: fixedContext).isEmpty)
    }

    @Test func duplicateErrorsAreAllReported() throws {
        let rules: [any ValidationRule] = [LengthRule(min: 3), LengthRule(min: 4)]
        #expect(
            validationErrors(of: "1", rules: rules, in: fixedContext) == [
                "LENGTH_VALIDATION_ERROR", "LENGTH_VALIDATION_ERROR",
            ])
    }
}
