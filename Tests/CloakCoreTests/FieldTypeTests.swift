import Testing

@testable import CloakCore

/// Reference §1: field types, their default patterns, dividers, regexes and sensitivity.
@Suite struct FieldTypeTests {
    @Test func casesFollowTheSDKDeclarationOrder() {
        // The SDK's text types in its order, then Cloak's file type (issue 47).
        #expect(FieldType.allCases == [.none, .cardNumber, .expDate, .date, .cvc, .cardHolderName, .ssn, .file])
    }

    @Test(arguments: [
        (FieldType.none, "", ""), (.cardNumber, "#### #### #### ####", ""), (.expDate, "##/##", "/"),
        (.date, "##-##-####", "/"), (.cvc, "####", ""), (.cardHolderName, "", ""), (.ssn, "###-##-####", "-"),
    ])
    func defaultFormatPatternAndDivider(type: FieldType, pattern: String, divider: String) {
        #expect(type.defaultFormatPattern == pattern)
        #expect(type.defaultDivider == divider)
    }

    @Test(arguments: [
        (FieldType.none, ""),
        (
            .cardNumber,
            #"^(?:4[0-9]{12}(?:[0-9]{3})?|[25][1-7][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$"#
        ),
        (.expDate, #"^(0[1-9]|1[0-2])\/?([0-9]{4}|[0-9]{2})$"#),
        (.date, #"^([0-9]{4}|[0-9]{2})\/?([0-9]{2})\/?([0-9]{4}|[0-9]{2})$"#),
        (.cardHolderName, #"^([a-zA-Z0-9\ \,\.\-\']{2,})$"#),
        (.ssn, #"^(?!(000|666|9))(\d{3}(-|\s)?(?!(00))\d{2}(-|\s)?(?!(0000))\d{4})$"#),
        (.cvc, #"\d*$"#),
    ])
    func defaultRegexIsTheSDKs(type: FieldType, regex: String) throws {
        #expect(type.defaultRegex == regex)
        if !regex.isEmpty { _ = try RegexPattern(regex) }
    }

    @Test func onlyCardNumberAndCVCAreSensitive() {
        for type in FieldType.allCases {
            #expect(type.isSensitive == (type == .cardNumber || type == .cvc), "\(type)")
        }
    }

    // MARK: default regexes, by example

    static func matches(_ type: FieldType, _ input: String) -> Bool {
        try! RegexPattern(type.defaultRegex).wholeMatch(input)
    }

    @Test(arguments: [
        ("12/30", true), ("1230", true), ("01/2030", true), ("012030", true), ("00/30", false), ("13/30", false),
        ("1/30", false), ("12/3", false), ("12/203", false), ("12-30", false), ("12//30", false), ("", false),
    ])
    func expDateRegex(input: String, valid: Bool) {
        #expect(Self.matches(.expDate, input) == valid)
    }

    @Test(arguments: [
        ("12/31/2020", true), ("12312020", true), ("2020/12/31", true), ("20201231", true), ("12/31/20", true),
        ("123120", true), ("12-31-2020", false), ("1/31/2020", false), ("12/31/202", false), ("", false),
    ])
    func dateRegex(input: String, valid: Bool) {
        #expect(Self.matches(.date, input) == valid)
    }

    @Test(arguments: [
        ("Jo", true), ("Joe Business", true), ("O'Brien-Smith, Jr.", true), ("R2 D2", true), ("J", false),
        ("", false), ("Jöhn", false), ("John_", false), ("John\tDoe", false), ("Jane@Doe", false),
    ])
    func cardHolderNameRegex(input: String, valid: Bool) {
        #expect(Self.matches(.cardHolderName, input) == valid)
    }

    @Test(arguments: [
        ("123-45-6789", true), ("123456789", true), ("123 45 6789", true), ("123-45 6789", true),
        ("123\t45\t6789", true), ("000-12-3456", false), ("666-12-3456", false), ("900-12-3456", false),
        ("123-00-6789", false), ("123-45-0000", false), ("123--45-6789", false), ("12-345-6789", false),
        ("123-45-678", false), ("", false),
    ])
    func ssnRegex(input: String, valid: Bool) {
        #expect(Self.matches(.ssn, input) == valid)
    }

    @Test(arguments: [
        ("", true), ("1", true), ("123", true), ("1234", true), ("12a", false), ("12\n", false), (" 12", false),
    ])
    func cvcRegex(input: String, valid: Bool) {
        #expect(Self.matches(.cvc, input) == valid)
    }

    // MARK: tokenization defaults (reference §7)

    @Test func tokenizationDefaultsPerType() {
        #expect(TokenizationSettings.defaults(for: .cardNumber) == .init(format: .FPE_SIX_T_FOUR, storage: .persistent))
        #expect(TokenizationSettings.defaults(for: .cvc) == .init(format: .NUM_LENGTH_PRESERVING, storage: .volatile))
        for type in [FieldType.none, .expDate, .date, .cardHolderName, .ssn] {
            #expect(TokenizationSettings.defaults(for: type) == .init(format: .UUID, storage: .persistent), "\(type)")
        }
        #expect(TokenizationSettings.Storage.persistent.rawValue == "PERSISTENT")
        #expect(TokenizationSettings.Storage.volatile.rawValue == "VOLATILE")
    }

    @Test func aliasFormatsAreTheVaultAPIs() {
        #expect(
            AliasFormatName.allCases.map(\.rawValue) == [
                "FPE_ACC_NUM_T_FOUR", "FPE_ALPHANUMERIC_ACC_NUM_T_FOUR", "FPE_SIX_T_FOUR", "FPE_SSN_T_FOUR",
                "FPE_T_FOUR", "NUM_LENGTH_PRESERVING", "PFPT", "RAW_UUID", "UUID", "GENERIC_T_FOUR",
                "ALPHANUMERIC_SIX_T_FOUR", "ALPHANUMERIC_LENGTH_PRESERVING", "ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR",
                "ALPHANUMERIC_SSN_T_FOUR", "ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR",
            ])
    }
}
