import Testing

@testable import CloakCore

/// Reference §1 (default rules, dynamic CVC), §5 (1001) and §8 (field state), end to end.
@Suite struct FormValidationTests {
    static let checkout = FormSchema(
        name: "checkout",
        fields: [
            field("card", .cardNumber),
            field("cvc", .cvc) { $0.cardField = "card" },
            field("exp", .expDate),
            field("name", .cardHolderName),
            field("ssn", .ssn),
            field("dob", .date),
            field("note", .none),
        ])

    static func state(_ v: FormValidation, _ name: String) -> JSONValue { v.result(name).state }

    // MARK: card state

    struct CardCase: Sendable, CustomTestStringConvertible {
        let input: String
        let brand: String
        let brandName: String
        let bin: String
        let last4: String
        let valid: Bool
        var testDescription: String { "\(brand) \(input.count)" }
    }

    static let cardCases: [CardCase] = {
        let maestro16 = TestLuhn.number(prefix: "6304", length: 16)
        let maestro12 = TestLuhn.number(prefix: "6304", length: 12)
        let maestro13 = TestLuhn.number(prefix: "6304", length: 13)
        let electron = TestLuhn.number(prefix: "4026", length: 16)
        let elo = TestLuhn.number(prefix: "401178", length: 16)
        let visa19 = TestLuhn.number(prefix: "4", length: 19)
        func suffix(_ s: String) -> String { String(s.suffix(4)) }
        return [
            CardCase(
                input: "4111 1111 1111 1111", brand: "visa", brandName: "Visa", bin: "41111111", last4: "1111",
                valid: true),
            CardCase(
                input: "4111111111111111", brand: "visa", brandName: "Visa", bin: "41111111", last4: "1111", valid: true
            ),
            CardCase(input: "4222222222222", brand: "visa", brandName: "Visa", bin: "", last4: "2222", valid: true),
            CardCase(
                input: visa19, brand: "visa", brandName: "Visa", bin: String(visa19.prefix(8)), last4: suffix(visa19),
                valid: true),
            CardCase(
                input: "5555 5555 5555 4444", brand: "mastercard", brandName: "Mastercard", bin: "55555555",
                last4: "4444", valid: true),
            CardCase(
                input: "2223003122003222", brand: "mastercard", brandName: "Mastercard", bin: "22230031", last4: "3222",
                valid: true),
            CardCase(
                input: maestro16, brand: "maestro", brandName: "Maestro", bin: String(maestro16.prefix(8)),
                last4: suffix(maestro16), valid: true),
            CardCase(
                input: maestro13, brand: "maestro", brandName: "Maestro", bin: "", last4: suffix(maestro13), valid: true
            ),
            CardCase(
                input: maestro12, brand: "maestro", brandName: "Maestro", bin: "", last4: suffix(maestro12), valid: true
            ),
            CardCase(
                input: electron, brand: "visaElectron", brandName: "Visa Electron", bin: String(electron.prefix(8)),
                last4: suffix(electron), valid: true),
            CardCase(
                input: "3782 822463 10005", brand: "amex", brandName: "American Express", bin: "378282", last4: "0005",
                valid: true),
            CardCase(
                input: "6011111111111117", brand: "discover", brandName: "Discover", bin: "601111", last4: "1117",
                valid: true),
            CardCase(
                input: "3530111333300000", brand: "jcb", brandName: "JCB", bin: "353011", last4: "0000", valid: true),
            CardCase(
                input: "30569309025904", brand: "dinersClub", brandName: "Diners Club", bin: "305693", last4: "5904",
                valid: true),
            CardCase(
                input: "6200000000000005", brand: "unionpay", brandName: "UnionPay", bin: "620000", last4: "0005",
                valid: true),
            CardCase(input: elo, brand: "elo", brandName: "ELO", bin: "401178", last4: suffix(elo), valid: true),
            CardCase(
                input: "6062826786276634", brand: "hipercard", brandName: "HiperCard", bin: "606282", last4: "6634",
                valid: true),
            CardCase(
                input: "5019717010103742", brand: "dankort", brandName: "Dankort", bin: "501971", last4: "3742",
                valid: true),
            CardCase(
                input: "6007220000000004", brand: "forbrugsforeningen", brandName: "Forbrugsforeningen", bin: "600722",
                last4: "0004", valid: true),
            // invalid: brand still detected, no bin, no last4
            CardCase(input: "4111111111111112", brand: "visa", brandName: "Visa", bin: "", last4: "", valid: false),
            CardCase(input: "4111 1111 1", brand: "visa", brandName: "Visa", bin: "", last4: "", valid: false),
            CardCase(
                input: "378282246310006", brand: "amex", brandName: "American Express", bin: "", last4: "", valid: false
            ),
            CardCase(
                input: TestLuhn.number(prefix: "9", length: 16), brand: "unknown", brandName: "Unknown", bin: "",
                last4: "", valid: false),
            CardCase(input: "", brand: "unknown", brandName: "Unknown", bin: "", last4: "", valid: false),
        ]
    }()

    @Test(arguments: cardCases)
    func cardStateReportsBrandBinAndLast4(c: CardCase) {
        let state = Self.state(validate(Self.checkout, ["card": c.input]), "card")
        #expect(state["cardBrand"] == .string(c.brand))
        #expect(state["cardBrandName"] == .string(c.brandName))
        #expect(state["bin"] == .string(c.bin))
        #expect(state["last4"] == .string(c.last4))
        #expect(state["isValid"]?.boolValue == c.valid)
        #expect(state["validationErrors"]?.arrayStrings == (c.valid ? [] : ["CARD_NUMBER_VALIDATION_ERROR"]))
    }

    @Test(arguments: cardCases)
    func stateJSONNeverContainsTheCardNumber(c: CardCase) {
        guard c.input.count >= 12 else { return }
        let v = validate(Self.checkout, ["card": c.input])
        let digits = c.input.filter(\.isNumber)
        for text in [JSONWriter.string(v.stateDocument), v.result("card").description] {
            #expect(!text.contains(digits))
            #expect(!text.contains(c.input))
        }
    }

    @Test func customBrandStateUsesTheCustomName() throws {
        let acme = PaymentCardModel(
            brand: .custom("Acme"), name: "Acme Card", matcher: BrandMatcher(regex: try RegexPattern(#"^9\d*$"#)),
            cardNumberLengths: [16], formatPattern: "#### #### #### ####")
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)], brands: CardBrandTable(custom: [acme]))
        let number = TestLuhn.number(prefix: "9", length: 16)
        let state = validate(form, ["card": number]).result("card").state
        #expect(state["cardBrand"] == .string("Acme"))
        #expect(state["cardBrandName"] == .string("Acme Card"))
        #expect(state["isValid"]?.boolValue == true)
        #expect(state["bin"] == .string(String(number.prefix(6))))
    }

    @Test func last4NeedsTwelveDigitsEvenWhenValid() throws {
        let short = PaymentCardModel(
            brand: .custom("Short"), name: "Short", matcher: BrandMatcher(regex: try RegexPattern(#"^8\d*$"#)),
            cardNumberLengths: [10], formatPattern: "##########")
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)], brands: CardBrandTable(custom: [short]))
        let number = TestLuhn.number(prefix: "8", length: 10)
        let state = validate(form, ["card": number]).result("card").state
        #expect(state["isValid"]?.boolValue == true)
        #expect(state["bin"] == .string(String(number.prefix(6))))
        #expect(state["last4"] == .string(""))
    }

    /// The card's raw text is its brand layout's: a layout longer than the digits detection reads
    /// (19) takes more of them, a shorter one fewer, one with other placeholders only what fits.
    @Test(arguments: [
        (String(repeating: "#", count: 22), String(repeating: "7", count: 25), String(repeating: "7", count: 22)),
        (String(repeating: "#", count: 22), "7777 7777 7777 7777 777", String(repeating: "7", count: 19)),
        ("#### ####", "7777 7777 7777", "77777777"),
        ("#### @@@@", "7777 7777 ABCD", "7777ABCD"),
    ])
    func cardRawTextFollowsTheBrandLayout(layout: String, input: String, raw: String) throws {
        let long = PaymentCardModel(
            brand: .custom("Long"), name: "Long", matcher: BrandMatcher(regex: try RegexPattern(#"^7\d*$"#)),
            cardNumberLengths: [22], luhn: false, formatPattern: layout)
        let form = FormSchema(name: "f", fields: [field("card", .cardNumber)], brands: CardBrandTable(custom: [long]))
        let result = validate(form, ["card": input]).result("card")
        #expect(result.rawText == raw)
        if raw.allSatisfy(\.isNumber) { #expect(result.cardModel?.name == "Long") }
    }

    @Test func formBrandsReplaceTheContextBrands() {
        let visaOnly = FormSchema(
            name: "f", fields: [field("card", .cardNumber)], brands: CardBrandTable(accepted: [.visa]))
        let mc = validate(visaOnly, ["card": "5555555555554444"]).result("card")
        #expect(!mc.isValid)
        #expect(mc.state["cardBrand"] == .string("unknown"))
        let mastercardContext = ValidationContext(today: fixedToday, brands: CardBrandTable(accepted: [.mastercard]))
        let standard = FormSchema(name: "f", fields: [field("card", .cardNumber)])
        #expect(validate(standard, ["card": "4111111111111111"], context: mastercardContext).result("card").isValid)
    }

    // MARK: SSN state

    @Test(arguments: [
        ("123-45-6789", "6789", true), ("123456789", "6789", true), ("123 45 6789", "6789", true),
        ("000-12-3456", "", false), ("123-45-678", "", false), ("", "", false),
    ])
    func ssnLast4OnlyWhenValid(input: String, last4: String, valid: Bool) {
        let state = Self.state(validate(Self.checkout, ["ssn": input]), "ssn")
        #expect(state["last4"] == .string(last4))
        #expect(state["isValid"]?.boolValue == valid)
    }

    @Test func otherFieldTypesHaveNoBrandOrLast4() {
        let v = validate(Self.checkout, ["exp": "12/30", "name": "Joe", "note": "x", "cvc": "123", "dob": "12312020"])
        for name in ["exp", "name", "note", "cvc", "dob"] {
            #expect(Self.state(v, name)["last4"] == nil, "\(name)")
            #expect(Self.state(v, name)["cardBrand"] == nil, "\(name)")
        }
    }

    // MARK: isEmpty, isDirty, inputLength

    @Test func presentFieldIsDirtyWithItsRawLength() {
        let state = Self.state(validate(Self.checkout, ["card": "4111 1111 1111 1111"]), "card")
        #expect(state["isDirty"]?.boolValue == true)
        #expect(state["isEmpty"]?.boolValue == false)
        #expect(state["inputLength"]?.numberText == "16")
    }

    @Test func inputLengthCountsCharactersNotBytes() {
        // "Zoë" is 4 bytes, "\r\n" one character: the written state counts characters either way.
        for (text, length) in [("Zoë Doe", "7"), ("a\r\nb", "3"), ("Jane", "4")] {
            let state = Self.state(validate(Self.checkout, ["name": text]), "name")
            #expect(state["inputLength"]?.numberText == length, "\(text.debugDescription)")
        }
    }

    @Test func presentEmptyFieldIsDirtyAndEmpty() {
        let v = validate(Self.checkout, ["card": "", "exp": " / "])
        for name in ["card", "exp"] {
            let state = Self.state(v, name)
            #expect(state["isDirty"]?.boolValue == true, "\(name)")
            #expect(state["isEmpty"]?.boolValue == true, "\(name)")
            #expect(state["inputLength"]?.numberText == "0", "\(name)")
        }
    }

    @Test func absentFieldIsNotDirtyAndEmpty() {
        let v = validate(Self.checkout, [:])
        for name in ["card", "cvc", "exp", "name", "ssn", "dob", "note"] {
            let state = Self.state(v, name)
            #expect(state["isDirty"]?.boolValue == false, "\(name)")
            #expect(state["isEmpty"]?.boolValue == true, "\(name)")
            #expect(state["inputLength"]?.numberText == "0", "\(name)")
        }
        // Rules still run against "" for absent fields.
        #expect(!v.result("card").isValid)
        #expect(v.result("note").isValid)
    }

    @Test func stateCarriesTheRequiredFlags() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("a", .none) { $0.isRequired = true },
                field("b", .none) { $0.isRequiredValidOnly = true },
            ])
        let v = validate(form, ["a": "x", "b": "y"])
        #expect(v.result("a").state["isRequired"]?.boolValue == true)
        #expect(v.result("a").state["isRequiredValidOnly"]?.boolValue == false)
        #expect(v.result("b").state["isRequired"]?.boolValue == false)
        #expect(v.result("b").state["isRequiredValidOnly"]?.boolValue == true)
    }

    @Test func stateDocumentListsEveryFieldInOrder() {
        let doc = validate(Self.checkout, ["card": "4111111111111111"]).stateDocument
        #expect(doc["isValid"]?.boolValue == true)
        #expect(doc["fields"]?.objectMembers?.map(\.key) == ["card", "cvc", "exp", "name", "ssn", "dob", "note"])
    }

    // MARK: default rules per type

    @Test(arguments: [
        ("exp", "12/30", [String]()), ("exp", "1230", []), ("exp", "11/26", []),
        ("exp", "10/26", ["EXPIRATION_DATE_VALIDATION_ERROR"]),
        ("exp", "13/30", ["PATTERN_VALIDATION_ERROR", "EXPIRATION_DATE_VALIDATION_ERROR"]),
        ("exp", "", ["PATTERN_VALIDATION_ERROR", "EXPIRATION_DATE_VALIDATION_ERROR"]),
        ("dob", "12/31/2020", []), ("dob", "12-31-2020", []), ("dob", "02/30/2020", ["DATE_VALIDATION_ERROR"]),
        ("dob", "", ["PATTERN_VALIDATION_ERROR", "DATE_VALIDATION_ERROR"]),
        ("ssn", "123-45-6789", []), ("ssn", "000-12-3456", ["PATTERN_VALIDATION_ERROR"]),
        ("name", "Joe Business", []), ("name", "J", ["PATTERN_VALIDATION_ERROR"]),
        ("name", "Jöe", ["PATTERN_VALIDATION_ERROR"]),
        ("note", "anything at all !@#", []), ("note", "", []),
        ("card", "4111111111111111", []), ("card", "4111111111111112", ["CARD_NUMBER_VALIDATION_ERROR"]),
    ])
    func defaultRulesPerFieldType(name: String, input: String, errors: [String]) {
        #expect(validate(Self.checkout, [name: input]).result(name).validationErrors == errors)
    }

    @Test func longYearPatternFailsTheDefaultExpiryRule() {
        let form = FormSchema(
            name: "f", fields: [field("exp", .expDate) { $0.formatPattern = FormatPattern("##/####") }])
        let result = validate(form, ["exp": "10/2027"]).result("exp")
        #expect(result.rawText == "102027")
        #expect(result.validationErrors == ["EXPIRATION_DATE_VALIDATION_ERROR"])
    }

    @Test func configuredRulesReplaceTheDefaults() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("card", .cardNumber) { $0.rules = [LengthRule(min: 20)] },
                field("exp", .expDate) {
                    $0.formatPattern = FormatPattern("##/####")
                    $0.rules = [CardExpirationDateRule(format: .longYear)]
                },
                field("free", .none) { $0.rules = [] },
            ])
        let v = validate(form, ["card": "4111111111111111", "exp": "10/2027", "free": ""])
        #expect(v.result("card").validationErrors == ["LENGTH_VALIDATION_ERROR"])
        #expect(v.result("exp").isValid)
        #expect(v.result("free").isValid)
    }

    // MARK: CVC follows the linked card's brand

    @Test(arguments: [
        ("378282246310005", "1234", true, [String]()),
        ("378282246310005", "123", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),
        ("3782", "123", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),  // brand follows a partial number too
        ("4111111111111111", "123", true, []),
        ("4111111111111111", "12", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),
        ("5555555555554444", "123", true, []),
        ("6011111111111117", "1", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),
        ("", "123", true, []), ("", "1234", true, []), ("", "12", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),
        ("9999", "1234", true, []), ("9999", "123", true, []),
        // "#" placeholders skip the letter (SDK masked field), so the raw CVC is "1": too short.
        ("4111111111111111", "1a", false, ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"]),
    ])
    func cvcLengthsFollowTheLinkedCardBrand(card: String, cvc: String, valid: Bool, errors: [String]) {
        let result = validate(Self.checkout, ["card": card, "cvc": cvc]).result("cvc")
        #expect(result.isValid == valid)
        #expect(result.validationErrors == errors)
    }

    @Test func cvcPatternFollowsTheLinkedCardBrand() {
        // The brand's CVC pattern caps the input: "###" for visa, "####" for amex.
        let visa = validate(Self.checkout, ["card": "4111111111111111", "cvc": "1234"]).result("cvc")
        #expect(visa.rawText == "123")
        #expect(visa.isValid)
        let amex = validate(Self.checkout, ["card": "378282246310005", "cvc": "12345"]).result("cvc")
        #expect(amex.rawText == "1234")
        #expect(amex.isValid)
    }

    @Test func cvcFollowsTheCardEvenWhenDeclaredBeforeIt() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("cvc", .cvc) { $0.cardField = "card" },
                field("card", .cardNumber),
            ])
        #expect(!validate(form, ["card": "378282246310005", "cvc": "123"]).result("cvc").isValid)
        #expect(validate(form, ["card": "378282246310005", "cvc": "1234"]).result("cvc").isValid)
    }

    @Test func unlinkedCVCAcceptsThreeOrFourDigits() {
        let form = FormSchema(name: "f", fields: [field("cvc", .cvc)])
        #expect(validate(form, ["cvc": "123"]).result("cvc").isValid)
        #expect(validate(form, ["cvc": "1234"]).result("cvc").isValid)
        #expect(validate(form, ["cvc": "12345"]).result("cvc").rawText == "1234")
        #expect(validate(form, ["cvc": "12"]).result("cvc").validationErrors == ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"])
        #expect(validate(form, ["cvc": ""]).result("cvc").validationErrors == ["LENGTH_RANGE_MATCH_VALIDATION_ERROR"])
    }

    // MARK: 1001

    static let required = FormSchema(
        name: "pay",
        fields: [
            field("card", .cardNumber) {
                $0.isRequired = true
                $0.isRequiredValidOnly = true
            },
            field("name", .cardHolderName) { $0.isRequired = true },
            field("ssn", .ssn) { $0.isRequiredValidOnly = true },
            field("exp", .expDate) { $0.isRequiredValidOnly = true },
            field("note", .none),
            field("loose", .cardHolderName),
        ])

    static func extra(_ error: CloakError, _ key: String) -> [String]? {
        error.extraInfo.first { $0.key == key }?.value.arrayStrings
    }

    @Test func inputErrorListsRequiredAndRequiredValidFields() throws {
        let v = validate(Self.required, ["name": "", "ssn": "000-00-0000", "exp": "12/30", "loose": "J"])
        #expect(!v.isValid)
        #expect(v.requiredMissing == ["card", "name"])
        #expect(v.requiredInvalid == ["card", "ssn"])
        let error = try #require(v.inputError)
        #expect(error.code == .inputDataIsNotValid)
        #expect(error.code.rawValue == 1001)
        #expect(error.code.key == "VGSSDKErrorInputDataIsNotValid")
        #expect(error.message == "Input data is not valid")
        #expect(Self.extra(error, "VGSSDKErrorInputDataRequired") == ["card", "name"])
        #expect(Self.extra(error, "VGSSDKErrorInputDataRequiredValid") == ["card", "ssn"])

        let body = error.body["error"]
        #expect(body?["domain"] == .string("vgscollect.sdk"))
        #expect(body?["code"]?.numberText == "1001")
        #expect(body?["key"] == .string("VGSSDKErrorInputDataIsNotValid"))
        #expect(body?["description"] == .string("Input data is not valid"))
        #expect(body?["extraInfo"]?["VGSSDKErrorInputDataRequired"]?.arrayStrings == ["card", "name"])
        #expect(body?["extraInfo"]?["VGSSDKErrorInputDataRequiredValid"]?.arrayStrings == ["card", "ssn"])
    }

    @Test func onlyNonEmptyListsArePresent() throws {
        let missingOnly = try #require(
            validate(Self.required, ["card": "4111111111111111", "ssn": "123-45-6789", "exp": "12/30"]).inputError)
        #expect(Self.extra(missingOnly, "VGSSDKErrorInputDataRequired") == ["name"])
        #expect(missingOnly.extraInfo.first { $0.key == "VGSSDKErrorInputDataRequiredValid" } == nil)

        let invalidOnly = try #require(
            validate(Self.required, ["card": "4111111111111111", "name": "Joe", "ssn": "123-45-6789", "exp": "10/26"])
                .inputError)
        #expect(Self.extra(invalidOnly, "VGSSDKErrorInputDataRequiredValid") == ["exp"])
        #expect(invalidOnly.extraInfo.first { $0.key == "VGSSDKErrorInputDataRequired" } == nil)
    }

    @Test func validSubmissionHasNoInputError() {
        let v = validate(
            Self.required, ["card": "4111111111111111", "name": "Joe", "ssn": "123-45-6789", "exp": "12/30"])
        #expect(v.isValid)
        #expect(v.inputError == nil)
        #expect(v.stateDocument["isValid"]?.boolValue == true)
    }

    @Test func invalidFieldsThatAreNotRequiredDoNotBlock() {
        // testSubmitInvalidNotRequiredFieldsReturnsNotNil
        let v = validate(
            Self.required,
            [
                "card": "4111111111111111", "name": "Joe", "ssn": "123-45-6789", "exp": "12/30", "loose": "J",
                "note": "",
            ])
        #expect(!v.result("loose").isValid)
        #expect(v.inputError == nil)
    }

    @Test func requiredFieldWithContentPassesEvenIfInvalid() {
        // isRequired only checks for content; validity is isRequiredValidOnly's job.
        let v = validate(
            Self.required, ["card": "4111111111111111", "name": "J", "ssn": "123-45-6789", "exp": "12/30"])
        #expect(!v.result("name").isValid)
        #expect(v.inputError == nil)
    }

    @Test func inputErrorNeverContainsTheSubmittedValues() throws {
        let v = validate(Self.required, ["card": "4111111111111112", "ssn": "000-12-3456", "name": ""])
        let error = try #require(v.inputError)
        let text = JSONWriter.string(error.body) + error.description + JSONWriter.string(v.stateDocument)
        #expect(!text.contains("4111111111111112"))
        #expect(!text.contains("000-12-3456"))
        #expect(!text.contains("000123456"))
    }
}
