import Testing

@testable import CloakCore

/// Seed 001 (Basis Theory): element masks, transforms and validation.
@Suite struct MaskTests {
    /// `["(", \d, \d, \d, ")", \d, \d, \d, "-", \d, \d, \d, \d]`, the seed's US phone mask.
    static let phoneMask: InputMask = {
        let digit = InputMask.Position.pattern(try! RegexPattern(#"\d"#))
        return InputMask([
            .literal("("), digit, digit, digit, .literal(")"), digit, digit, digit, .literal("-"), digit, digit, digit,
            digit,
        ])
    }()

    static let phoneTransform = InputTransform(matcher: try! RegexPattern("[()-]"))

    @Test func phoneMaskHasThirteenPositions() {
        #expect(Self.phoneMask.positions.count == 13)
    }

    @Test(arguments: ["(555)123-4567", "5551234567"])
    func phoneMaskFillsLiteralsWhetherTypedOrNot(input: String) {
        let masked = Self.phoneMask.apply(input)
        #expect(masked.value == "(555)123-4567")
        #expect(masked.isComplete)
    }

    @Test(arguments: ["", "5", "555", "555123", "555123456", "(555)123-456", "(555)"])
    func incompleteInputIsNotComplete(input: String) {
        #expect(!Self.phoneMask.apply(input).isComplete)
    }

    @Test(arguments: ["55512345678", "(555)123-45678", "5551234567 ", "5551234567x"])
    func inputLongerThanTheMaskIsNotComplete(input: String) {
        #expect(!Self.phoneMask.apply(input).isComplete)
    }

    @Test func restrictedPositionsOnlyTakeMatchingCharacters() {
        // Only digits are allowed at the regex positions; letters never reach the value.
        let masked = Self.phoneMask.apply("(abc)")
        #expect(!masked.isComplete)
        #expect(!masked.value.contains { $0.isLetter })
    }

    @Test func letterMask() {
        let letter = InputMask.Position.pattern(try! RegexPattern("[a-zA-Z]"))
        let digit = InputMask.Position.pattern(try! RegexPattern("[0-9]"))
        let mask = InputMask([letter, letter, .literal("-"), digit, digit])
        #expect(mask.apply("AB-12").value == "AB-12")
        #expect(mask.apply("AB-12").isComplete)
        #expect(mask.apply("ab12").value == "ab-12")
        #expect(mask.apply("ab12").isComplete)
        #expect(!mask.apply("A1-12").isComplete)
    }

    /// ASCII input is masked byte by byte from tables the patterns answered once; the answer must
    /// be the one the character walk gives, for every mask and input, CR LF and non-ASCII included.
    @Test func byteMaskingAgreesWithCharacterMasking() throws {
        let masks = [
            Self.phoneMask,
            InputMask([
                .pattern(try RegexPattern("[a-zA-Z]")), .literal("-"), .pattern(try RegexPattern("[^x]")),
                .pattern(try RegexPattern(#"\s"#)), .literal(" "),
            ]),
            InputMask([.literal("\n"), .pattern(try RegexPattern("."))]),
            InputMask([.pattern(try RegexPattern("[0-9]")), .literal("\r\n"), .pattern(try RegexPattern("[0-9]"))]),
            InputMask([.literal("é"), .pattern(try RegexPattern(#"\d"#))]),  // no byte plan: a literal is not ASCII
        ]
        let alphabet: [String] = ["(", ")", "-", "5", "a", "X", "x", " ", "\t", "\r", "\n", "\r\n", "é", "٣", "\u{0}"]
        var generator = SystemRandomNumberGenerator()
        for mask in masks {
            for _ in 0..<2_000 {
                let input = (0..<Int.random(in: 0...16, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator)!
                }.joined()
                let bytes = mask.apply(input)
                let characters = mask.applyByCharacter(input)
                #expect(
                    bytes.value == characters.value && bytes.isComplete == characters.isComplete, "\(Array(input.utf8))"
                )
            }
        }
    }

    // MARK: transform

    @Test func transformRemovesTheMaskLiterals() {
        #expect(Self.phoneTransform.apply("(555)123-4567") == "5551234567")
        #expect(Self.phoneTransform.replacement == "")
    }

    @Test func transformUsesTheReplacementString() {
        let t = InputTransform(matcher: try! RegexPattern("[()-]"), replacement: "x")
        #expect(t.apply("(555)123-4567") == "x555x123x4567")
        #expect(InputTransform(matcher: try! RegexPattern(#"\s+"#)).apply(" a  b ") == "ab")
    }

    // MARK: validation after the transform (seed: "valid if any matches are found")

    @Test func validationRegexRunsOnTheTransformedValue() throws {
        let tenDigits = try RegexPattern(#"^\d{10}$"#)
        #expect(tenDigits.containsMatch(Self.phoneTransform.apply("(555)123-4567")))
        #expect(!tenDigits.containsMatch("(555)123-4567"))
        #expect(try RegexPattern(#"^\(\d{3}\)\d{3}-\d{4}$"#).containsMatch("(555)123-4567"))
        #expect(try RegexPattern(#"\d"#).containsMatch("abc1"))
        #expect(!(try RegexPattern(#"\d"#).containsMatch("abc")))
    }

    // MARK: through a field

    static let form = FormSchema(
        name: "f",
        fields: [
            field("phone", .none) {
                $0.mask = MaskTests.phoneMask
                $0.transform = MaskTests.phoneTransform
            },
            field("masked", .none) { $0.mask = MaskTests.phoneMask },
        ])

    @Test(arguments: ["(555)123-4567", "5551234567"])
    func maskedAndTransformedFieldSendsTheDigits(input: String) {
        let v = validate(Self.form, ["phone": input, "masked": input])
        #expect(v.result("phone").outputText == "5551234567")
        #expect(v.result("phone").isValid)
        // Without a transform the value is sent as masked.
        #expect(v.result("masked").outputText == "(555)123-4567")
        #expect(v.result("masked").isValid)
    }

    @Test(arguments: ["555", "55512345678", ""])
    func incompleteMaskFailsValidation(input: String) {
        let result = validate(Self.form, ["phone": input]).result("phone")
        #expect(!result.isValid)
        #expect(result.validationErrors == [ValidationErrorString.maskIncomplete])
    }
}
