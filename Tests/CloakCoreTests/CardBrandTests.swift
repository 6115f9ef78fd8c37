import Testing

@testable import CloakCore

/// Reference §2: the brand table, detection order, lengths, checksums and CVC lengths.
@Suite struct CardBrandTests {
    // MARK: the table

    @Test func builtInBrandsFollowTheSDKDetectionOrder() {
        #expect(PaymentCardModel.builtIn.map(\.brand) == sdkBrandOrder)
        #expect(CardBrandTable.builtInBrands == sdkBrandOrder)
        #expect(CardBrandTable.standard.models.map(\.brand) == sdkBrandOrder)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let brand: CardBrand
        let name: String
        let regex: String
        let lengths: [Int]
        let luhn: Bool
        let cvc: [Int]
        let pattern: String
        var testDescription: String { brand.id }
    }

    /// Copied from the reference table (Markdown `\|` unescaped).
    static let referenceTable: [Row] = [
        Row(
            brand: .elo, name: "ELO",
            regex:
                #"^(4011(78|79)|43(1274|8935)|45(1416|7393|763(1|2))|50(4175|6699|67[0-7][0-9]|9000)|627780|63(6297|6368)|650(03([^4])|04([0-9])|05(0|1)|4(0[5-9]|3[0-9]|8[5-9]|9[0-9])|5([0-2][0-9]|3[0-8])|9([2-6][0-9]|7[0-8])|541|700|720|901)|651652|655000|655021)\d*$"#,
            lengths: [16], luhn: true, cvc: [3], pattern: "#### #### #### ####"),
        Row(
            brand: .visaElectron, name: "Visa Electron", regex: #"^4(026|17500|405|508|844|91[37])\d*$"#,
            lengths: [16], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .maestro, name: "Maestro", regex: #"^(5018|5020|5038|6304|6390[0-9]{2}|67[0-9]{4})\d*$"#,
            lengths: [12, 13, 14, 15, 16, 17, 18, 19], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .forbrugsforeningen, name: "Forbrugsforeningen", regex: #"^600\d*$"#,
            lengths: [16], luhn: true, cvc: [3], pattern: "#### #### #### ####"),
        Row(
            brand: .dankort, name: "Dankort", regex: #"^5019\d*$"#,
            lengths: [16], luhn: true, cvc: [3], pattern: "#### #### #### ####"),
        Row(
            brand: .visa, name: "Visa", regex: #"^4\d*$"#,
            lengths: [13, 16, 19], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .mastercard, name: "Mastercard",
            regex: #"^(5[1-5][0-9]{4})\d*$|^(222[1-9]|22[3-9]|2[3-6]\d{2}|27[0-1]\d|2720)([0-9]{2})\d*$"#,
            lengths: [16], luhn: true, cvc: [3], pattern: "#### #### #### ####"),
        Row(
            brand: .amex, name: "American Express", regex: #"^3[47]\d*$"#,
            lengths: [15], luhn: true, cvc: [4], pattern: "#### ###### #####"),
        Row(
            brand: .hipercard, name: "HiperCard", regex: #"^(384100|384140|384160|606282|637095|637568|60(?!11))\d*$"#,
            lengths: [14, 15, 16, 17, 18, 19], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .dinersClub, name: "Diners Club", regex: #"^3(?:[689]|(?:0[059]+))\d*$"#,
            lengths: [14, 16, 17, 18, 19], luhn: true, cvc: [3], pattern: "#### ###### #########"),
        Row(
            brand: .discover, name: "Discover", regex: #"^(6011|65|64[4-9]|622)\d*$"#,
            lengths: [16, 17, 18, 19], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .unionpay, name: "UnionPay", regex: #"^62\d*$"#,
            lengths: [16, 17, 18, 19], luhn: false, cvc: [3], pattern: "#### #### #### #### ###"),
        Row(
            brand: .jcb, name: "JCB", regex: #"^(2131|1800|35)\d*$"#,
            lengths: [16, 17, 18, 19], luhn: true, cvc: [3], pattern: "#### #### #### #### ###"),
    ]

    @Test(arguments: referenceTable)
    func builtInModelMatchesTheReferenceRow(row: Row) {
        let model = builtInModel(row.brand)
        #expect(model.name == row.name)
        #expect(model.matcher.regex.source == row.regex)
        #expect(model.cardNumberLengths.sorted() == row.lengths)
        #expect(model.luhn == row.luhn)
        #expect(model.cvcLengths == row.cvc)
        #expect(model.formatPattern.pattern == row.pattern)
        #expect(model.cvcFormatPattern.pattern == String(repeating: "#", count: row.cvc.max()!))
    }

    @Test func unknownModelMatchesTheReference() {
        let unknown = PaymentCardModel.unknown
        #expect(unknown.brand == .unknown)
        #expect(unknown.name == "Unknown")
        #expect(unknown.matcher.regex.source == #"^\d*$"#)
        #expect(unknown.cardNumberLengths == [16, 17, 18, 19])
        #expect(unknown.luhn)
        #expect(unknown.cvcLengths.sorted() == [3, 4])
        #expect(unknown.cvcFormatPattern.pattern == "####")
        #expect(unknown.formatPattern.pattern == "#### #### #### #### ###")
    }

    @Test func amexCVCPatternHasFourDigitsAndOthersThree() {
        #expect(builtInModel(.amex).cvcFormatPattern.pattern == "####")
        for brand in sdkBrandOrder where brand != .amex {
            #expect(builtInModel(brand).cvcFormatPattern.pattern == "###", "\(brand)")
        }
    }

    @Test func customModelDefaultsToLuhnAndThreeDigitCVC() throws {
        let model = PaymentCardModel(
            brand: .custom("Acme"), name: "Acme", matcher: BrandMatcher(regex: try RegexPattern(#"^9\d*$"#)),
            cardNumberLengths: [16], formatPattern: "#### #### #### ####")
        #expect(model.luhn)
        #expect(model.cvcLengths == [3])
    }

    @Test func eightDigitBINBrandsAreVisaVisaElectronMastercardAndMaestro() {
        let eight: Set<CardBrand> = [.visa, .visaElectron, .mastercard, .maestro]
        for brand in sdkBrandOrder + [.unknown, .custom("visa")] {
            #expect(brand.hasEightDigitBIN == eight.contains(brand), "\(brand)")
        }
    }

    @Test func customBrandsCompareByName() {
        #expect(CardBrand.custom("Acme") == CardBrand.custom("Acme"))
        #expect(CardBrand.custom("Acme") != CardBrand.custom("Other"))
        #expect(CardBrand.custom("visa") != CardBrand.visa)
    }

    // MARK: detection

    static let detection: [(String, CardBrand)] = [
        // visa, including short prefixes and the prefixes that become elo or visaElectron only later
        ("4", .visa), ("41", .visa), ("4111111111111111", .visa), ("43", .visa), ("40117", .visa), ("401177", .visa),
        ("401180", .visa), ("4025", .visa), ("4027", .visa), ("4404", .visa), ("4914", .visa), ("41750", .visa),
        ("417501", .visa), ("43127", .visa),
        // elo wins over visa, discover and unionpay
        ("401178", .elo), ("401179", .elo), ("4011780000000000", .elo), ("431274", .elo), ("438935", .elo),
        ("451416", .elo), ("457393", .elo), ("457631", .elo), ("457632", .elo), ("504175", .elo), ("506699", .elo),
        ("506700", .elo), ("506779", .elo), ("509000", .elo), ("627780", .elo), ("636297", .elo), ("636368", .elo),
        ("650031", .elo), ("650035", .elo), ("650040", .elo), ("650049", .elo), ("650050", .elo), ("650051", .elo),
        ("650405", .elo), ("650409", .elo), ("650430", .elo), ("650439", .elo), ("650485", .elo), ("650489", .elo),
        ("650490", .elo), ("650499", .elo), ("650500", .elo), ("650529", .elo), ("650530", .elo), ("650538", .elo),
        ("650541", .elo), ("650700", .elo), ("650720", .elo), ("650901", .elo), ("650920", .elo), ("650969", .elo),
        ("650970", .elo), ("650978", .elo), ("651652", .elo), ("655000", .elo), ("655021", .elo),
        // neighbours of elo ranges that fall through to discover
        ("650034", .discover), ("650052", .discover), ("650404", .discover), ("650410", .discover),
        ("650484", .discover), ("650539", .discover), ("650540", .discover), ("650919", .discover),
        ("650979", .discover), ("651651", .discover), ("655001", .discover), ("655020", .discover), ("6500", .discover),
        ("650", .discover),
        // visaElectron before visa
        ("4026", .visaElectron), ("402600", .visaElectron), ("417500", .visaElectron), ("4405", .visaElectron),
        ("4508", .visaElectron), ("4844", .visaElectron), ("4913", .visaElectron), ("4917", .visaElectron),
        // maestro
        ("5018", .maestro), ("5020", .maestro), ("5038", .maestro), ("6304", .maestro), ("6304000000000000", .maestro),
        ("639000", .maestro), ("639099", .maestro), ("670000", .maestro), ("679999", .maestro),
        ("6759649826438453", .maestro),
        // forbrugsforeningen before hipercard's 60
        ("600", .forbrugsforeningen), ("6000", .forbrugsforeningen), ("6007220000000004", .forbrugsforeningen),
        // dankort
        ("5019", .dankort), ("5019717010103742", .dankort),
        // mastercard: 51–55 with six digits, 2-series 2221–2720
        ("510000", .mastercard), ("555555", .mastercard), ("559999", .mastercard), ("5555555555554444", .mastercard),
        ("222100", .mastercard), ("222999", .mastercard), ("22300", .mastercard), ("223000", .mastercard),
        ("229999", .mastercard), ("230000", .mastercard), ("269999", .mastercard), ("270000", .mastercard),
        ("271999", .mastercard), ("272000", .mastercard), ("272099", .mastercard),
        ("2223003122003222", .mastercard),
        // amex
        ("34", .amex), ("37", .amex), ("378282246310005", .amex),
        // hipercard: 606282, 60 but not 6011, and the 3841xx prefixes before diners
        ("60", .hipercard), ("601", .hipercard), ("6010", .hipercard), ("6012", .hipercard), ("6062", .hipercard),
        ("606282", .hipercard), ("609999", .hipercard), ("6062826786276634", .hipercard), ("384100", .hipercard),
        ("384140", .hipercard), ("384160", .hipercard), ("637095", .hipercard), ("637568", .hipercard),
        // dinersClub: 36, 38, 39, 300/305/309
        ("36", .dinersClub), ("38", .dinersClub), ("39", .dinersClub), ("300", .dinersClub), ("305", .dinersClub),
        ("309", .dinersClub), ("3000", .dinersClub), ("3001", .dinersClub), ("38410", .dinersClub),
        ("384101", .dinersClub), ("30569309025904", .dinersClub),
        // discover: 6011 (not hipercard), 65, 644–649, 622 (before unionpay)
        ("6011", .discover), ("601100", .discover), ("6011111111111117", .discover), ("65", .discover),
        ("644", .discover), ("649", .discover), ("622", .discover), ("6221", .discover), ("6229", .discover),
        // unionpay: 62 but not 622 or 627780
        ("62", .unionpay), ("621", .unionpay), ("623", .unionpay), ("629", .unionpay), ("62778", .unionpay),
        ("627781", .unionpay), ("6200000000000005", .unionpay),
        // jcb
        ("35", .jcb), ("3528", .jcb), ("3530111333300000", .jcb), ("2131", .jcb), ("213100", .jcb), ("1800", .jcb),
        ("180000", .jcb),
        // unknown
        ("", .unknown), ("0", .unknown), ("1", .unknown), ("2", .unknown), ("3", .unknown), ("5", .unknown),
        ("6", .unknown), ("7", .unknown), ("8", .unknown), ("9", .unknown), ("30", .unknown), ("301", .unknown),
        ("304", .unknown), ("308", .unknown), ("31", .unknown), ("63", .unknown), ("643", .unknown),
        ("6390", .unknown), ("67", .unknown), ("67000", .unknown), ("55", .unknown), ("5555", .unknown),
        ("55555", .unknown), ("500000", .unknown), ("506780", .unknown), ("560000", .unknown), ("22", .unknown),
        ("2221", .unknown), ("22210", .unknown), ("222000", .unknown), ("2230", .unknown), ("2720", .unknown),
        ("272100", .unknown), ("280000", .unknown), ("213", .unknown), ("2130", .unknown), ("180", .unknown),
        ("1801", .unknown), ("9999999999999999", .unknown),
        // detection runs on the raw text: anything but digits after the prefix is no brand
        ("4a", .unknown), (" 4", .unknown), ("4111 1111", .unknown), ("4\n", .unknown), ("abc", .unknown),
    ]

    @Test(arguments: detection)
    func detectsBrandFromRawPrefix(number: String, brand: CardBrand) {
        #expect(CardBrandTable.standard.detect(number).brand == brand)
    }

    @Test func shortPrefixFourIsVisa() {
        #expect(CardBrandTable.standard.detect("4").brand == .visa)
        #expect(CardBrandTable.standard.detect("4").name == "Visa")
    }

    // MARK: payment-card validation

    static let validNumbers: [(String, CardBrand)] = [
        ("4111111111111111", .visa), ("4012888888881881", .visa), ("4222222222222", .visa),
        (TestLuhn.number(prefix: "4", length: 19), .visa),
        ("5555555555554444", .mastercard), ("5105105105105100", .mastercard), ("2223003122003222", .mastercard),
        (TestLuhn.number(prefix: "272099", length: 16), .mastercard),
        ("378282246310005", .amex), ("371449635398431", .amex), ("340000000000009", .amex),
        ("6011111111111117", .discover), ("6011000990139424", .discover),
        (TestLuhn.number(prefix: "644", length: 19), .discover),
        (TestLuhn.number(prefix: "6221", length: 17), .discover),
        ("3530111333300000", .jcb), ("3566002020360505", .jcb), (TestLuhn.number(prefix: "2131", length: 16), .jcb),
        (TestLuhn.number(prefix: "1800", length: 19), .jcb),
        ("30569309025904", .dinersClub), ("38520000023237", .dinersClub), ("36227206271667", .dinersClub),
        (TestLuhn.number(prefix: "300", length: 16), .dinersClub),
        (TestLuhn.number(prefix: "36", length: 19), .dinersClub),
        ("6200000000000005", .unionpay), ("6200000000000004", .unionpay), ("6212345678901234567", .unionpay),
        ("62123456789012345", .unionpay),
        (TestLuhn.number(prefix: "401178", length: 16), .elo), (TestLuhn.number(prefix: "509000", length: 16), .elo),
        (TestLuhn.number(prefix: "650031", length: 16), .elo), (TestLuhn.number(prefix: "636368", length: 16), .elo),
        (TestLuhn.number(prefix: "4026", length: 16), .visaElectron),
        (TestLuhn.number(prefix: "417500", length: 16), .visaElectron),
        (TestLuhn.number(prefix: "4917", length: 16), .visaElectron),
        ("6759649826438453", .maestro), (TestLuhn.number(prefix: "6304", length: 12), .maestro),
        (TestLuhn.number(prefix: "6304", length: 19), .maestro),
        (TestLuhn.number(prefix: "5018", length: 16), .maestro),
        (TestLuhn.number(prefix: "639000", length: 15), .maestro),
        (TestLuhn.number(prefix: "670000", length: 13), .maestro),
        ("6007220000000004", .forbrugsforeningen), (TestLuhn.number(prefix: "600", length: 16), .forbrugsforeningen),
        ("5019717010103742", .dankort),
        ("6062826786276634", .hipercard), (TestLuhn.number(prefix: "384100", length: 19), .hipercard),
        (TestLuhn.number(prefix: "609", length: 14), .hipercard),
        (TestLuhn.number(prefix: "637568", length: 16), .hipercard),
    ]

    @Test(arguments: validNumbers)
    func validTestCardNumbersPassThePaymentCardRule(number: String, brand: CardBrand) {
        #expect(CardBrandTable.standard.detect(number).brand == brand)
        #expect(PaymentCardRule().validate(number, in: fixedContext))
    }

    @Test(arguments: validNumbers.filter { $0.1 != .unionpay })
    func brokenLuhnFailsForEveryBrandButUnionPay(number: String, brand: CardBrand) {
        let broken = TestLuhn.broken(number)
        #expect(CardBrandTable.standard.detect(broken).brand == brand)
        #expect(!PaymentCardRule().validate(broken, in: fixedContext))
    }

    @Test func unionPayHasNoChecksum() {
        for length in 16...19 {
            let passing = TestLuhn.number(prefix: "62", length: length)
            let failing = TestLuhn.broken(passing)
            #expect(!TestLuhn.passes(failing))
            #expect(PaymentCardRule().validate(passing, in: fixedContext))
            #expect(PaymentCardRule().validate(failing, in: fixedContext), "\(length) digits")
        }
    }

    /// Every brand: every length from 10 to 20 with a Luhn-valid number is accepted exactly when
    /// the reference table lists that length.
    @Test(arguments: referenceTable)
    func onlyTheBrandsLengthsAreAccepted(row: Row) {
        let prefixes: [CardBrand: String] = [
            .elo: "401178", .visaElectron: "4026", .maestro: "6304", .forbrugsforeningen: "600", .dankort: "5019",
            .visa: "4111", .mastercard: "555555", .amex: "37", .hipercard: "606282", .dinersClub: "36",
            .discover: "6011", .unionpay: "62", .jcb: "35",
        ]
        for length in 10...20 {
            let number = TestLuhn.number(prefix: prefixes[row.brand]!, length: length)
            #expect(CardBrandTable.standard.detect(number).brand == row.brand)
            #expect(
                PaymentCardRule().validate(number, in: fixedContext) == row.lengths.contains(length),
                "\(row.brand) with \(length) digits")
        }
    }

    @Test func visaElectronIsNotValidAtThirteenDigitsEvenThoughVisaIs() {
        let electron = TestLuhn.number(prefix: "4026", length: 13)
        #expect(CardBrandTable.standard.detect(electron).brand == .visaElectron)
        #expect(!PaymentCardRule().validate(electron, in: fixedContext))
        #expect(PaymentCardRule().validate(TestLuhn.number(prefix: "4111", length: 13), in: fixedContext))
    }

    @Test func nonDigitsAreNotACardNumber() {
        for input in ["4111 1111 1111 1111", "4111-1111-1111-1111", "", "abcdabcdabcdabcd", "4111111111111111 "] {
            #expect(!PaymentCardRule().validate(input, in: fixedContext), "\(input)")
        }
    }

    // MARK: unknown brand

    @Test func unknownBrandIsInvalidByDefault() {
        let number = TestLuhn.number(prefix: "9", length: 16)
        #expect(CardBrandTable.standard.detect(number).brand == .unknown)
        #expect(!PaymentCardRule().validate(number, in: fixedContext))
        #expect(PaymentCardRule().validateUnknownCardBrand == false)
        #expect(PaymentCardRule().error == "CARD_NUMBER_VALIDATION_ERROR")
    }

    @Test(arguments: [
        (TestLuhn.number(prefix: "9", length: 16), true), (TestLuhn.number(prefix: "9", length: 17), true),
        (TestLuhn.number(prefix: "0", length: 19), true), (TestLuhn.number(prefix: "9", length: 15), false),
        (TestLuhn.number(prefix: "9", length: 20), false),
        (TestLuhn.broken(TestLuhn.number(prefix: "9", length: 16)), false),
        ("", false), ("9a99999999999999", false),
    ])
    func validateUnknownCardBrandUsesTheUnknownModel(number: String, valid: Bool) {
        #expect(PaymentCardRule(validateUnknownCardBrand: true).validate(number, in: fixedContext) == valid)
    }

    @Test func validateUnknownCardBrandDoesNotRelaxKnownBrands() {
        // A visa of the wrong length stays invalid: the brand's rules apply, not the unknown ones.
        let visa17 = TestLuhn.number(prefix: "4", length: 17)
        #expect(!PaymentCardRule(validateUnknownCardBrand: true).validate(visa17, in: fixedContext))
    }

    // MARK: custom brands and accepted lists

    static func acme(_ regex: String = #"^411111\d*$"#, lengths: [Int] = [16], luhn: Bool = true) -> PaymentCardModel {
        PaymentCardModel(
            brand: .custom("Acme"), name: "Acme Card", matcher: BrandMatcher(regex: try! RegexPattern(regex)),
            cardNumberLengths: lengths, luhn: luhn, formatPattern: "#### #### #### ####")
    }

    @Test func customBrandsAreCheckedBeforeBuiltIns() {
        let table = CardBrandTable(custom: [Self.acme()])
        #expect(table.models.map(\.brand) == [.custom("Acme")] + sdkBrandOrder)
        #expect(table.detect("4111111111111111").brand == .custom("Acme"))
        #expect(table.detect("4111111111111111").name == "Acme Card")
        #expect(table.detect("4012888888881881").brand == .visa)
        let context = ValidationContext(today: fixedToday, brands: table)
        #expect(PaymentCardRule().validate("4111111111111111", in: context))
        #expect(!PaymentCardRule().validate(TestLuhn.number(prefix: "411111", length: 13), in: context))
    }

    @Test func customBrandValidatesWithItsOwnLengthsAndLuhn() {
        let table = CardBrandTable(custom: [Self.acme(#"^9\d*$"#, lengths: [18])])
        let context = ValidationContext(today: fixedToday, brands: table)
        let number = TestLuhn.number(prefix: "9", length: 18)
        #expect(PaymentCardRule().validate(number, in: context))
        #expect(!PaymentCardRule().validate(TestLuhn.broken(number), in: context))
        #expect(!PaymentCardRule().validate(TestLuhn.number(prefix: "9", length: 16), in: context))
        // The same number without the custom brand is an unknown brand.
        #expect(!PaymentCardRule().validate(number, in: fixedContext))

        let noLuhn = CardBrandTable(custom: [Self.acme(#"^9\d*$"#, lengths: [18], luhn: false)])
        #expect(
            PaymentCardRule().validate(
                TestLuhn.broken(number), in: ValidationContext(today: fixedToday, brands: noLuhn)))
    }

    @Test func acceptedListReplacesTheOrder() {
        let table = CardBrandTable(accepted: [.visa, .elo])
        #expect(table.models.map(\.brand) == [.visa, .elo])
        #expect(table.detect(TestLuhn.number(prefix: "401178", length: 16)).brand == .visa)

        let unionFirst = CardBrandTable(accepted: [.unionpay, .discover])
        #expect(unionFirst.detect("6221260000000000").brand == .unionpay)
        #expect(unionFirst.detect("6011111111111117").brand == .discover)
    }

    @Test func brandsOutsideTheAcceptedListAreUnknownAndInvalid() {
        let table = CardBrandTable(accepted: [.mastercard])
        let context = ValidationContext(today: fixedToday, brands: table)
        #expect(table.detect("4111111111111111").brand == .unknown)
        #expect(!PaymentCardRule().validate("4111111111111111", in: context))
        #expect(PaymentCardRule().validate("5555555555554444", in: context))
    }

    @Test func acceptedListMayIncludeCustomBrands() {
        let table = CardBrandTable(custom: [Self.acme()], accepted: [.visa, .custom("Acme")])
        #expect(table.models.map(\.brand) == [.visa, .custom("Acme")])
        #expect(table.detect("4111111111111111").brand == .visa)
        let acmeOnly = CardBrandTable(custom: [Self.acme()], accepted: [.custom("Acme")])
        #expect(acmeOnly.detect("4111111111111111").brand == .custom("Acme"))
        #expect(acmeOnly.detect("4012888888881881").brand == .unknown)
    }
}
