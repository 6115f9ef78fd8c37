import Testing

@testable import CloakCore

/// Reference preamble: raw text (`getSecureRawText`) and output text (`getSecureTextWithDivider`).
@Suite struct FormatPatternTests {
    @Test func placeholdersAreHashAtLowerAUpperAAndStar() {
        #expect(FormatPattern.placeholderCharacters == ["#", "@", "a", "A", "*"])
        #expect(FormatPattern("#### #### #### ####").placeholderCount == 16)
        #expect(FormatPattern("##/##").placeholderCount == 4)
        #expect(FormatPattern("@a-A*#").placeholderCount == 5)
        #expect(FormatPattern("").placeholderCount == 0)
        #expect(FormatPattern("").isEmpty)
    }

    // MARK: raw text

    @Test(arguments: [
        ("#### #### #### ####", "4111 1111 1111 1111", "4111111111111111"),
        ("#### #### #### ####", "4111111111111111", "4111111111111111"),
        ("#### #### #### ####", "4111-1111-1111-1111", "4111111111111111"),
        ("#### #### #### ####", " 4111.1111/1111_1111 ", "4111111111111111"),
        ("##/##", "12/30", "1230"),
        ("###-##-####", "123-45-6789", "123456789"),
        ("##-##-####", "12/31/2020", "12312020"),
        ("**-**", "ab-12", "ab12"),
        ("@@@@", "José", "José"),
    ])
    func rawTextDropsEverythingButLettersAndDigits(pattern: String, input: String, raw: String) {
        #expect(FormatPattern(pattern).rawText(input) == raw)
    }

    @Test(arguments: [
        ("#### #### #### ####", "41111111111111112222", "4111111111111111"),
        ("#### #### #### ####", "4111 1111 1111 1111 2222", "4111111111111111"),
        ("##/##", "12/2030", "1220"),
        ("###", "1234", "123"),
        ("#### ###### #####", "3782 822463 100051", "378282246310005"),
    ])
    func rawTextIsCutToThePlaceholderCount(pattern: String, input: String, raw: String) {
        #expect(FormatPattern(pattern).rawText(input) == raw)
    }

    /// Reference preamble: `#` digit, `@` any letter, `a` lowercase, `A` uppercase, `*` letter or
    /// digit. A character the next placeholder does not accept is skipped (SDK
    /// `MaskedTextField.formatText`), so it never reaches the raw text.
    @Test(arguments: [
        ("##/##", "1a2/30", "1230"),
        ("@@-##", "a1b23", "ab23"),
        ("AA", "aBC", "BC"),
        ("aa", "Abc", "bc"),
        ("**", "a1", "a1"),
        ("#### #### #### ####", "4111a1111 1111 1111", "4111111111111111"),
        ("###", "1x2y3", "123"),
    ])
    func placeholderAcceptsOnlyItsCharacterClass(pattern: String, input: String, raw: String) {
        #expect(FormatPattern(pattern).rawText(input) == raw)
    }

    @Test func lettersInsideACardNumberAreDroppedByTheDigitPlaceholders() {
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber), field("exp", .expDate)])
        let v = validate(form, ["card": "4111a1111 1111 1111", "exp": "1x2/30"])
        #expect(v.result("card").rawText == "4111111111111111")
        #expect(v.result("card").isValid)
        #expect(v.result("exp").rawText == "1230")
        #expect(v.result("exp").isValid)
    }

    /// `#` takes ASCII decimal digits only (SDK `getOnlyDigitsString`, `vgsAsciiDecimalDigits`):
    /// other scripts' digits never become card digits, so they cannot make a number valid.
    @Test func nonASCIIDigitsAreNotCardDigits() {
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)])
        let arabic = "62" + String(repeating: "١", count: 14)  // UnionPay prefix, no checksum
        let result = validate(form, ["card": arabic]).result("card")
        #expect(!result.isValid)
        #expect(result.rawText == "62")
    }

    @Test func emptyPatternKeepsTheInputExactly() {
        for input in ["4111 1111", "Joe Business", "  x-y ", "", "é\n"] {
            #expect(FormatPattern("").rawText(input) == input)
        }
    }

    // MARK: output text

    @Test(arguments: [
        ("##/##", "1230", "/", "12/30"),
        ("##/##", "1230", "-", "12-30"),
        ("##/##", "1230", "--", "12--30"),
        ("##/####", "122030", "/", "12/2030"),
        ("### #### ##", "123456789", "-", "123-4567-89"),
        ("###-##-####", "123456789", "-", "123-45-6789"),
        ("##-##-####", "12312020", "/", "12/31/2020"),
        ("####-##-##", "20201231", "/", "2020/12/31"),
    ])
    func outputTextReplacesEveryLiteralWithTheDivider(pattern: String, raw: String, divider: String, output: String) {
        #expect(FormatPattern(pattern).outputText(raw: raw, divider: divider) == output)
    }

    @Test func emptyDividerOrPatternGivesTheRawText() {
        #expect(
            FormatPattern("#### #### #### ####").outputText(raw: "4111111111111111", divider: "") == "4111111111111111")
        #expect(FormatPattern("").outputText(raw: "Joe Business", divider: "-") == "Joe Business")
        #expect(FormatPattern("").outputText(raw: "", divider: "") == "")
    }

    /// The seed scenario: a `.none` field with pattern "### #### ##" and divider "-".
    @Test func noneFieldWithPatternAndDivider() {
        let pattern = FormatPattern("### #### ##")
        let raw = pattern.rawText("1234567890")
        #expect(raw == "123456789")
        #expect(pattern.outputText(raw: raw, divider: "-") == "123-4567-89")

        let form = FormSchema(
            name: "f",
            fields: [
                field("account", .none) {
                    $0.formatPattern = FormatPattern("### #### ##")
                    $0.divider = "-"
                }
            ])
        let result = validate(form, ["account": "1234567890"]).result("account")
        #expect(result.outputText == "123-4567-89")
        #expect(result.isValid)
    }

    @Test func expDateFieldOutputUsesTheSlashDivider() {
        let form = FormSchema(name: "f", fields: [field("exp", .expDate)])
        #expect(validate(form, ["exp": "12/30"]).result("exp").outputText == "12/30")
        #expect(validate(form, ["exp": "1230"]).result("exp").outputText == "12/30")
        #expect(validate(form, ["exp": "12-30"]).result("exp").outputText == "12/30")
        #expect(validate(form, ["exp": "12/30"]).result("exp").rawText == "1230")
    }

    @Test func cardFieldOutputIsTheRawDigits() {
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)])
        let result = validate(form, ["card": "4111 1111 1111 1111"]).result("card")
        #expect(result.rawText == "4111111111111111")
        #expect(result.outputText == "4111111111111111")
    }

    @Test func cardFieldIsCutByTheDetectedBrandsPattern() {
        // Mastercard's pattern has 16 placeholders, visa's 19.
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)])
        #expect(validate(form, ["card": "5555 5555 5555 4444 999"]).result("card").rawText == "5555555555554444")
        #expect(validate(form, ["card": "5555 5555 5555 4444 999"]).result("card").isValid)
        let visa19 = TestLuhn.number(prefix: "4", length: 19)
        #expect(validate(form, ["card": visa19 + "12"]).result("card").rawText == visa19)
        // Amex: 15 placeholders.
        #expect(validate(form, ["card": "3782 822463 10005 9"]).result("card").rawText == "378282246310005")
    }

    /// Reference §2: "Format pattern while typing: the detected brand's formatPattern"
    /// (`VGSTextField.updateFormatPattern` replaces the card field's pattern on every change).
    @Test func configuredCardPatternIsReplacedByTheDetectedBrandsPattern() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("card", .cardNumber) {
                    $0.formatPattern = FormatPattern("#### #### #### ####")
                    $0.divider = "-"
                }
            ])
        let visa19 = TestLuhn.number(prefix: "4", length: 19)
        let long = validate(form, ["card": visa19]).result("card")
        #expect(long.rawText == visa19)
        #expect(long.isValid)
        let amex = validate(form, ["card": "378282246310005"]).result("card")
        #expect(amex.outputText == "3782-822463-10005")
    }

    @Test func ssnAndDateFieldsUseTheirDefaultLayout() {
        let form = FormSchema(
            name: "f", fields: [field("ssn", .ssn), field("dob", .date), field("name", .cardHolderName)])
        let v = validate(form, ["ssn": "123456789", "dob": "12312020", "name": "Joe Business"])
        #expect(v.result("ssn").outputText == "123-45-6789")
        #expect(v.result("dob").outputText == "12/31/2020")
        #expect(v.result("name").outputText == "Joe Business")
        #expect(v.result("name").rawText == "Joe Business")
    }
}
