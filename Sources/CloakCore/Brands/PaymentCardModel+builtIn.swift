extension PaymentCardModel {
    /// The SDK's built-in brands in its detection order (`defaultCardModels`): first match wins.
    public static let builtIn: [PaymentCardModel] = [
        builtIn(
            .elo, "ELO",
            #"^(4011(78|79)|43(1274|8935)|45(1416|7393|763(1|2))|50(4175|6699|67[0-7][0-9]|9000)|627780|63(6297|6368)|650(03([^4])|04([0-9])|05(0|1)|4(0[5-9]|3[0-9]|8[5-9]|9[0-9])|5([0-2][0-9]|3[0-8])|9([2-6][0-9]|7[0-8])|541|700|720|901)|651652|655000|655021)\d*$"#,
            BrandPrefixTable([
                "401178", "401179", "431274", "438935", "451416", "457393", "457631", "457632",
                "504175", "506699", "5067[0-7][0-9]", "509000", "627780", "636297", "636368",
                "65003[^4]", "65004[0-9]", "65005[01]", "65040[5-9]", "65043[0-9]", "65048[5-9]", "65049[0-9]",
                "6505[0-2][0-9]", "65053[0-8]", "6509[2-6][0-9]", "65097[0-8]", "650541", "650700", "650720",
                "650901", "651652", "655000", "655021",
            ]),
            lengths: [16], pattern: "#### #### #### ####"),
        builtIn(
            .visaElectron, "Visa Electron", #"^4(026|17500|405|508|844|91[37])\d*$"#,
            BrandPrefixTable(["4026", "417500", "4405", "4508", "4844", "491[37]"]),
            lengths: [16], pattern: "#### #### #### #### ###"),
        builtIn(
            .maestro, "Maestro", #"^(5018|5020|5038|6304|6390[0-9]{2}|67[0-9]{4})\d*$"#,
            BrandPrefixTable(["5018", "5020", "5038", "6304", "6390[0-9][0-9]", "67[0-9][0-9][0-9][0-9]"]),
            lengths: Array(12...19), pattern: "#### #### #### #### ###"),
        builtIn(
            .forbrugsforeningen, "Forbrugsforeningen", #"^600\d*$"#, BrandPrefixTable(["600"]),
            lengths: [16], pattern: "#### #### #### ####"),
        builtIn(
            .dankort, "Dankort", #"^5019\d*$"#, BrandPrefixTable(["5019"]),
            lengths: [16], pattern: "#### #### #### ####"),
        builtIn(
            .visa, "Visa", #"^4\d*$"#, BrandPrefixTable(["4"]),
            lengths: [13, 16, 19], pattern: "#### #### #### #### ###"),
        builtIn(
            .mastercard, "Mastercard",
            #"^(5[1-5][0-9]{4})\d*$|^(222[1-9]|22[3-9]|2[3-6]\d{2}|27[0-1]\d|2720)([0-9]{2})\d*$"#,
            BrandPrefixTable([
                "5[1-5][0-9][0-9][0-9][0-9]", "222[1-9][0-9][0-9]", "22[3-9][0-9][0-9]",
                "2[3-6][0-9][0-9][0-9][0-9]", "27[0-1][0-9][0-9][0-9]", "2720[0-9][0-9]",
            ]),
            lengths: [16], pattern: "#### #### #### ####"),
        builtIn(
            .amex, "American Express", #"^3[47]\d*$"#, BrandPrefixTable(["3[47]"]),
            lengths: [15], cvc: [4], pattern: "#### ###### #####"),
        builtIn(
            .hipercard, "HiperCard", #"^(384100|384140|384160|606282|637095|637568|60(?!11))\d*$"#,
            BrandPrefixTable(
                ["384100", "384140", "384160", "606282", "637095", "637568", "60"], unless: ["60": "6011"]),
            lengths: Array(14...19), pattern: "#### #### #### #### ###"),
        builtIn(
            .dinersClub, "Diners Club", #"^3(?:[689]|(?:0[059]+))\d*$"#, BrandPrefixTable(["3[689]", "30[059]"]),
            lengths: [14, 16, 17, 18, 19], pattern: "#### ###### #########"),
        builtIn(
            .discover, "Discover", #"^(6011|65|64[4-9]|622)\d*$"#, BrandPrefixTable(["6011", "65", "64[4-9]", "622"]),
            lengths: [16, 17, 18, 19], pattern: "#### #### #### #### ###"),
        builtIn(
            .unionpay, "UnionPay", #"^62\d*$"#, BrandPrefixTable(["62"]),
            lengths: [16, 17, 18, 19], luhn: false, pattern: "#### #### #### #### ###"),
        builtIn(
            .jcb, "JCB", #"^(2131|1800|35)\d*$"#, BrandPrefixTable(["2131", "1800", "35"]),
            lengths: [16, 17, 18, 19], pattern: "#### #### #### #### ###"),
    ]

    /// What is used when no brand matches (`VGSUnknownPaymentCardModel`).
    public static let unknown = PaymentCardModel(
        brand: .unknown, name: "Unknown", matcher: BrandMatcher(regex: try! RegexPattern(#"^\d*$"#)),
        cardNumberLengths: [16, 17, 18, 19], cvcLengths: [3, 4], formatPattern: "#### #### #### #### ###")

    private static func builtIn(
        _ brand: CardBrand, _ name: String, _ regex: String, _ prefixes: BrandPrefixTable, lengths: [Int],
        cvc: [Int] = [3], luhn: Bool = true, pattern: String
    ) -> PaymentCardModel {
        // The regexes above are constants checked by the test suite; failing to compile one is a programming error.
        let compiled = try! RegexPattern(regex)
        return PaymentCardModel(
            brand: brand, name: name, matcher: BrandMatcher(regex: compiled, prefixes: prefixes),
            cardNumberLengths: lengths, cvcLengths: cvc, luhn: luhn, formatPattern: pattern)
    }
}
