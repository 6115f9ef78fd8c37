import Testing

@testable import CloakCore

private func date(_ y: Int, _ m: Int, _ d: Int) -> CalendarDate { CalendarDate(year: y, month: m, day: d)! }

/// Reference §4: `VGSDateFormat`, `VGSDate`, `VGSValidationRuleDateRange`, the convertors and the serializers.
@Suite struct DateFormatTests {
    // MARK: VGSDateFormat

    @Test func displayFormatsAndPatterns() {
        #expect(DateFormat.allCases == [.mmddyyyy, .ddmmyyyy, .yyyymmdd])
        #expect(DateFormat.mmddyyyy.displayFormat == "mm-dd-yyyy")
        #expect(DateFormat.ddmmyyyy.displayFormat == "dd-mm-yyyy")
        #expect(DateFormat.yyyymmdd.displayFormat == "yyyy-mm-dd")
        #expect(DateFormat.mmddyyyy.formatPattern == "##-##-####")
        #expect(DateFormat.ddmmyyyy.formatPattern == "##-##-####")
        #expect(DateFormat.yyyymmdd.formatPattern == "####-##-##")
        #expect(DateRangeRule().format == .mmddyyyy)
    }

    @Test(arguments: [
        (DateFormat.mmddyyyy, "02292024", CalendarDate(year: 2024, month: 2, day: 29)),
        (.mmddyyyy, "02292023", nil), (.mmddyyyy, "02292000", CalendarDate(year: 2000, month: 2, day: 29)),
        (.mmddyyyy, "02291900", nil), (.mmddyyyy, "12312020", CalendarDate(year: 2020, month: 12, day: 31)),
        (.mmddyyyy, "01012020", CalendarDate(year: 2020, month: 1, day: 1)), (.mmddyyyy, "04312020", nil),
        (.mmddyyyy, "13012020", nil), (.mmddyyyy, "00012020", nil), (.mmddyyyy, "01002020", nil),
        (.mmddyyyy, "0229202", nil), (.mmddyyyy, "022920240", nil), (.mmddyyyy, "", nil), (.mmddyyyy, "ab012020", nil),
        (.mmddyyyy, "02/29/24", nil), (.mmddyyyy, "02-29-2024", nil),
        (.ddmmyyyy, "29022024", CalendarDate(year: 2024, month: 2, day: 29)), (.ddmmyyyy, "29022023", nil),
        (.ddmmyyyy, "31122020", CalendarDate(year: 2020, month: 12, day: 31)), (.ddmmyyyy, "12312020", nil),
        (.ddmmyyyy, "31042020", nil),
        (.yyyymmdd, "20240229", CalendarDate(year: 2024, month: 2, day: 29)), (.yyyymmdd, "20230229", nil),
        (.yyyymmdd, "20201231", CalendarDate(year: 2020, month: 12, day: 31)), (.yyyymmdd, "20201331", nil),
        (.yyyymmdd, "12312020", nil), (.yyyymmdd, "2020-1-1", nil),
    ])
    func dateFromInputSplitsEightCharactersByPosition(format: DateFormat, input: String, expected: CalendarDate?) {
        #expect(format.date(fromInput: input) == expected)
    }

    @Test(arguments: [
        (DateFormat.mmddyyyy, "05/02/2016"), (.ddmmyyyy, "02/05/2016"), (.yyyymmdd, "2016/05/02"),
    ])
    func formatDateIsZeroPadded(format: DateFormat, expected: String) {
        #expect(format.format(date(2016, 5, 2), divider: "/") == expected)
    }

    @Test func formatDateWithOtherDividers() {
        #expect(DateFormat.mmddyyyy.format(date(2016, 5, 2), divider: "") == "05022016")
        #expect(DateFormat.yyyymmdd.format(date(987, 1, 9), divider: "-") == "0987-01-09")
        #expect(DateFormat.ddmmyyyy.format(date(2016, 12, 31), divider: " . ") == "31 . 12 . 2016")
    }

    @Test(arguments: [
        ("12/31/2020", "/"), ("12-31-2020", "-"), ("2020.12.31", "."), ("12 / 31 / 2020", " / "),
        ("12..31..2020", ".."),
        ("12312020", ""), ("12/31-2020", ""), ("12/31/2020/", ""), ("12/31", ""), ("", ""), ("/12/31", "/"),
        ("ab", ""), ("12/31//2020", ""),
    ])
    func dividerIsFoundOnlyForTwoIdenticalNonDigitRuns(input: String, divider: String) {
        #expect(DateFormat.divider(in: input) == divider)
    }

    // MARK: VGSDate

    @Test func calendarDateRejectsDaysThatDoNotExist() {
        #expect(CalendarDate(year: 2024, month: 2, day: 29) != nil)
        #expect(CalendarDate(year: 2023, month: 2, day: 29) == nil)
        #expect(CalendarDate(year: 2000, month: 2, day: 29) != nil)
        #expect(CalendarDate(year: 2100, month: 2, day: 29) == nil)
        #expect(CalendarDate(year: 2024, month: 2, day: 30) == nil)
        #expect(CalendarDate(year: 2024, month: 4, day: 31) == nil)
        #expect(CalendarDate(year: 2024, month: 12, day: 31) != nil)
        #expect(CalendarDate(year: 2024, month: 13, day: 1) == nil)
        #expect(CalendarDate(year: 2024, month: 0, day: 1) == nil)
        #expect(CalendarDate(year: 2024, month: 1, day: 0) == nil)
        #expect(CalendarDate(year: 2024, month: 1, day: 32) == nil)
    }

    @Test func calendarDatesOrderByYearThenMonthThenDay() {
        #expect(date(2020, 12, 31) < date(2021, 1, 1))
        #expect(date(2021, 1, 31) < date(2021, 2, 1))
        #expect(date(2021, 2, 1) < date(2021, 2, 2))
        #expect(!(date(2021, 2, 2) < date(2021, 2, 2)))
        #expect(date(2021, 2, 2) == date(2021, 2, 2))
    }

    @Test func calendarDateISOText() {
        #expect(CalendarDate(iso: "2024-02-29") == date(2024, 2, 29))
        #expect(CalendarDate(iso: "2023-02-29") == nil)
        #expect(CalendarDate(iso: "2024-2-29") == nil)
        #expect(CalendarDate(iso: "20240229") == nil)
        #expect(date(2024, 2, 9).description == "2024-02-09")
    }

    // MARK: DateRangeRule

    static let start = date(2020, 1, 1)
    static let end = date(2020, 12, 31)

    @Test(arguments: [
        ("01012020", true), ("12312020", true), ("06152020", true), ("12312019", false), ("01012021", false),
        ("02292020", true), ("02302020", false), ("1231202", false), ("", false),
    ])
    func dateRangeIsInclusiveAtBothEnds(input: String, valid: Bool) {
        #expect(DateRangeRule(start: Self.start, end: Self.end).validate(input, in: fixedContext) == valid)
    }

    @Test func dateRangeWithOnlyOneBound() {
        let fromStart = DateRangeRule(start: Self.start)
        #expect(fromStart.validate("01012020", in: fixedContext))
        #expect(fromStart.validate("12319999", in: fixedContext))
        #expect(!fromStart.validate("12312019", in: fixedContext))
        let toEnd = DateRangeRule(end: Self.end)
        #expect(toEnd.validate("12312020", in: fixedContext))
        #expect(toEnd.validate("01010001", in: fixedContext))
        #expect(!toEnd.validate("01012021", in: fixedContext))
    }

    @Test func dateRangeWithoutBoundsAcceptsAnyRealDate() {
        let rule = DateRangeRule()
        #expect(rule.validate("02292024", in: fixedContext))
        #expect(!rule.validate("02292023", in: fixedContext))
        #expect(!rule.validate("02/29/2024", in: fixedContext))
    }

    @Test func dateRangeUsesItsFormat() {
        let rule = DateRangeRule(format: .yyyymmdd, start: Self.start, end: Self.end)
        #expect(rule.validate("20200101", in: fixedContext))
        #expect(rule.validate("20201231", in: fixedContext))
        #expect(!rule.validate("20210101", in: fixedContext))
        #expect(!rule.validate("01012020", in: fixedContext))
        #expect(DateRangeRule(format: .ddmmyyyy).validate("31122020", in: fixedContext))
        #expect(!DateRangeRule(format: .ddmmyyyy).validate("12312020", in: fixedContext))
    }

    // MARK: DateFormatConvertor

    @Test(arguments: [
        ("12/31/2020", DateFormat.mmddyyyy, DateFormat.ddmmyyyy, "31/12/2020"),
        ("12/31/2020", .mmddyyyy, .yyyymmdd, "2020/12/31"), ("12-31-2020", .mmddyyyy, .ddmmyyyy, "31-12-2020"),
        ("12312020", .mmddyyyy, .ddmmyyyy, "31122020"), ("2020/12/31", .yyyymmdd, .mmddyyyy, "12/31/2020"),
        ("31.12.2020", .ddmmyyyy, .yyyymmdd, "2020.12.31"), ("05/02/2016", .mmddyyyy, .mmddyyyy, "05/02/2016"),
        // divider not detectable: the date is written without one
        ("12/31-2020", .mmddyyyy, .ddmmyyyy, "31122020"),
        // does not parse: returned unchanged
        ("02/30/2020", .mmddyyyy, .ddmmyyyy, "02/30/2020"), ("12/31/20", .mmddyyyy, .ddmmyyyy, "12/31/20"),
        ("", .mmddyyyy, .ddmmyyyy, ""), ("garbage", .mmddyyyy, .yyyymmdd, "garbage"),
    ])
    func convertDateReordersTheDigits(text: String, from: DateFormat, to: DateFormat, expected: String) {
        #expect(convertDate(text, from: from, to: to) == expected)
    }

    // MARK: ExpDateFormatConvertor

    @Test(arguments: [
        ("12/30", ExpDateFormat.shortYear, ExpDateFormat.longYear, "12/2030"),
        ("12/2030", .longYear, .shortYear, "12/30"), ("12/30", .shortYear, .shortYearThenMonth, "30/12"),
        ("12/30", .shortYear, .longYearThenMonth, "2030/12"), ("2030/12", .longYearThenMonth, .shortYear, "12/30"),
        ("30/12", .shortYearThenMonth, .longYear, "12/2030"), ("11/25", .shortYear, .longYear, "11/2025"),
        ("12-30", .shortYear, .longYear, "12-2030"), ("12 / 30", .shortYear, .longYear, "12 / 2030"),
        // by position, not by digits: with no divider there is none in the output
        ("1125", .shortYear, .longYear, "112025"), ("122030", .longYear, .longYearThenMonth, "203012"),
        ("12/30", .shortYear, .shortYear, "12/30"),
        // the year does not parse: returned unchanged
        ("12/ab", .shortYear, .longYear, "12/ab"), ("", .shortYear, .longYear, ""),
    ])
    func convertExpDateWorksByPosition(text: String, from: ExpDateFormat, to: ExpDateFormat, expected: String) {
        #expect(convertExpDate(text, from: from, to: to) == expected)
    }

    /// ASCII expiries are converted and read from their bytes; the answers must be the character
    /// walk's for any text, signs, CR LF and other scripts' digits included.
    @Test func byteExpiryPathsAgreeWithTheCharacterPaths() {
        let alphabet: [String] = ["1", "2", "0", "9", "/", "-", " ", "+", "a", "\r\n", "\r", "٣", "é"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3_000 {
            let text = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }.joined()
            for from in ExpDateFormat.allCases {
                if let bytes = CardExpirationDateRule.digits(text, from) {
                    let parts = CardExpirationDateRule.parts(text, from)
                    #expect(parts?.month == bytes.month && parts?.year == bytes.year, "\(Array(text.utf8))")
                }
                for to in ExpDateFormat.allCases {
                    #expect(
                        convertExpDate(text, from: from, to: to) == convertExpDateByCharacter(text, from: from, to: to),
                        "\(Array(text.utf8)) \(from) \(to)")
                }
            }
        }
    }

    // MARK: serializers

    @Test func expDateSerializerSplitsMonthAndYear() {
        let parts = FieldSerializer.serializeExpDate("12/30", format: nil, monthField: "month", yearField: "year")
        #expect(parts.map(\.key) == ["month", "year"])
        #expect(parts.map(\.value) == ["12", "30"])
    }

    @Test(arguments: [
        ("12/2030", ExpDateFormat?.some(.longYear), "12", "2030"),
        ("2030/12", .some(.longYearThenMonth), "12", "2030"),
        ("30/12", .some(.shortYearThenMonth), "12", "30"),
        ("12/30", .some(.shortYear), "12", "30"),
        ("12/30", nil, "12", "30"),
        // (derived) a long-year pattern without an output format: the year is cut to two digits
        ("122030", nil, "12", "20"), ("12/2030", nil, "12", "20"),
    ])
    func expDateSerializerReadsDigitsWithTheOutputFormat(
        content: String, format: ExpDateFormat?, month: String, year: String
    ) {
        let parts = FieldSerializer.serializeExpDate(content, format: format, monthField: "m", yearField: "y")
        #expect(parts.map(\.key) == ["m", "y"])
        #expect(parts.map(\.value) == [month, year])
    }

    @Test func dateSerializerEmitsZeroPaddedComponents() {
        let parts = FieldSerializer.serializeDate(
            "05/02/2016", format: nil, dayField: "d", monthField: "m", yearField: "y")
        #expect(
            Dictionary(uniqueKeysWithValues: parts.map { ($0.key, $0.value) }) == ["d": "02", "m": "05", "y": "2016"])
        let ymd = FieldSerializer.serializeDate(
            "2016-05-02", format: .yyyymmdd, dayField: "d", monthField: "m", yearField: "y")
        #expect(
            Dictionary(uniqueKeysWithValues: ymd.map { ($0.key, $0.value) }) == ["d": "02", "m": "05", "y": "2016"])
        let dmy = FieldSerializer.serializeDate(
            "02.05.2016", format: .ddmmyyyy, dayField: "d", monthField: "m", yearField: "y")
        #expect(
            Dictionary(uniqueKeysWithValues: dmy.map { ($0.key, $0.value) }) == ["d": "02", "m": "05", "y": "2016"])
    }

    @Test func dateSerializerEmitsNothingForAnUnparseableDate() {
        #expect(
            FieldSerializer.serializeDate("02/30/2016", format: nil, dayField: "d", monthField: "m", yearField: "y")
                .isEmpty)
        #expect(FieldSerializer.serializeDate("", format: nil, dayField: "d", monthField: "m", yearField: "y").isEmpty)
    }

    @Test func serializerFieldNames() {
        #expect(FieldSerializer.expDate(monthField: "m", yearField: "y").fieldNames == ["m", "y"])
        #expect(FieldSerializer.date(dayField: "d", monthField: "m", yearField: "y").fieldNames == ["d", "m", "y"])
    }

    // MARK: through a field (output text, then conversion, then serializer)

    static func expField(_ configure: (inout FieldSchema) -> Void) -> FormSchema {
        FormSchema(name: "f", fields: [field("exp", .expDate, configure)])
    }

    @Test func plainExpDateFieldConvertsShortYearToLongYear() {
        // testNotTokenizableFieldsTokenization: "1125", shortYear → longYear, is returned as "11/2025".
        let form = Self.expField {
            $0.inputDateFormat = .expDate(.shortYear)
            $0.outputDateFormat = .expDate(.longYear)
        }
        #expect(validate(form, ["exp": "1125"]).result("exp").outputText == "11/2025")
        #expect(validate(form, ["exp": "11/25"]).result("exp").outputText == "11/2025")
    }

    @Test func conversionNeedsBothFormats() {
        let onlyInput = Self.expField { $0.inputDateFormat = .expDate(.shortYear) }
        #expect(validate(onlyInput, ["exp": "1230"]).result("exp").outputText == "12/30")
        let onlyOutput = Self.expField { $0.outputDateFormat = .expDate(.longYear) }
        #expect(validate(onlyOutput, ["exp": "1230"]).result("exp").outputText == "12/30")
    }

    @Test func expDateFieldSerializesMonthAndYear() {
        let plain = Self.expField { $0.serializer = .expDate(monthField: "month", yearField: "year") }
        let parts = validate(plain, ["exp": "12/30"]).result("exp").outputComponents
        #expect(parts.map(\.key) == ["month", "year"])
        #expect(parts.map(\.value) == ["12", "30"])

        for output in [ExpDateFormat.longYear, .longYearThenMonth] {
            let long = Self.expField {
                $0.serializer = .expDate(monthField: "month", yearField: "year")
                $0.inputDateFormat = .expDate(.shortYear)
                $0.outputDateFormat = .expDate(output)
            }
            let parts = validate(long, ["exp": "12/30"]).result("exp").outputComponents
            #expect(parts.map(\.value) == ["12", "2030"], "\(output)")
        }
    }

    @Test func longYearPatternWithoutOutputFormatTruncatesTheSerializedYear() {
        let form = Self.expField {
            $0.formatPattern = FormatPattern("##/####")
            $0.serializer = .expDate(monthField: "month", yearField: "year")
        }
        let result = validate(form, ["exp": "122030"]).result("exp")
        #expect(result.outputText == "12/2030")
        #expect(result.outputComponents.map(\.value) == ["12", "20"])
    }

    @Test func dateFieldSerializesDayMonthYear() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("dob", .date) { $0.serializer = .date(dayField: "d", monthField: "m", yearField: "y") }
            ])
        let parts = validate(form, ["dob": "05/02/2016"]).result("dob").outputComponents
        #expect(
            Dictionary(uniqueKeysWithValues: parts.map { ($0.key, $0.value) }) == ["d": "02", "m": "05", "y": "2016"])
    }

    @Test func dateFieldConvertsBetweenFormats() {
        let form = FormSchema(
            name: "f",
            fields: [
                field("dob", .date) {
                    $0.inputDateFormat = .date(.mmddyyyy)
                    $0.outputDateFormat = .date(.yyyymmdd)
                }
            ])
        let result = validate(form, ["dob": "12-31-2020"]).result("dob")
        #expect(result.rawText == "12312020")
        #expect(result.outputText == "2020/12/31")
    }

    @Test func fieldWithoutSerializerEmitsItsOwnName() {
        let form = Self.expField { _ in }
        let parts = validate(form, ["exp": "12/30"]).result("exp").outputComponents
        #expect(parts.map(\.key) == ["exp"])
        #expect(parts.map(\.value) == ["12/30"])
    }

    @Test func dateFormatKindNamesDependOnTheFieldType() {
        #expect(DateFormatKind(name: "longYear", for: .expDate) == .expDate(.longYear))
        #expect(DateFormatKind(name: "yyyymmdd", for: .date) == .date(.yyyymmdd))
        #expect(DateFormatKind(name: "longYear", for: .date) == nil)
        #expect(DateFormatKind(name: "yyyymmdd", for: .expDate) == nil)
        #expect(DateFormatKind(name: "longYear", for: .cardNumber) == nil)
    }
}
