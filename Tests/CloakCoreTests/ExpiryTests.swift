import Foundation
import Testing

@testable import CloakCore

private func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

private func expInput(month: Int, year: Int, _ format: ExpDateFormat) -> String {
    let y = format.yearCharacters == 2 ? two(year % 100) : String(year)
    return format.isYearFirst ? y + two(month) : two(month) + y
}

/// Reference §4, `VGSValidationRuleCardExpirationDate`.
@Suite struct ExpiryTests {
    @Test func formatsHaveTheReferenceShapes() {
        #expect(ExpDateFormat.shortYear.yearCharacters == 2)
        #expect(ExpDateFormat.longYear.yearCharacters == 4)
        #expect(ExpDateFormat.shortYearThenMonth.yearCharacters == 2)
        #expect(ExpDateFormat.longYearThenMonth.yearCharacters == 4)
        for f in ExpDateFormat.allCases { #expect(f.monthCharacters == 2) }
        #expect(!ExpDateFormat.shortYear.isYearFirst)
        #expect(!ExpDateFormat.longYear.isYearFirst)
        #expect(ExpDateFormat.shortYearThenMonth.isYearFirst)
        #expect(ExpDateFormat.longYearThenMonth.isYearFirst)
    }

    @Test(arguments: ["shortYear", "longYear", "shortYearThenMonth", "longYearThenMonth"])
    func formatsAreNamedAsInTheSDK(name: String) {
        #expect(ExpDateFormat(rawValue: name)?.rawValue == name)
    }

    @Test func unknownFormatNamesAreRejected() {
        #expect(ExpDateFormat(rawValue: "mmyy") == nil)
        #expect(ExpDateFormat(rawValue: "ShortYear") == nil)
    }

    @Test func defaultFormatIsShortYear() {
        #expect(CardExpirationDateRule().format == .shortYear)
    }

    // MARK: fixed today, 2026-11-22

    @Test(arguments: [
        // shortYear (mmyy)
        (ExpDateFormat.shortYear, "1126", true), (.shortYear, "1026", false), (.shortYear, "1226", true),
        (.shortYear, "0127", true), (.shortYear, "1225", false), (.shortYear, "0146", true), (.shortYear, "1246", true),
        (.shortYear, "0147", false), (.shortYear, "1299", false), (.shortYear, "0026", false),
        (.shortYear, "1326", false),
        (.shortYear, "9926", false), (.shortYear, "112", false), (.shortYear, "11260", false),
        (.shortYear, "11/26", false),
        (.shortYear, "", false), (.shortYear, "ab26", false), (.shortYear, "11ab", false),
        (.shortYear, "112026", false),
        // longYear (mmyyyy)
        (.longYear, "112026", true), (.longYear, "102026", false), (.longYear, "122046", true),
        (.longYear, "012047", false),
        (.longYear, "122025", false), (.longYear, "002030", false), (.longYear, "132030", false),
        (.longYear, "1126", false),
        (.longYear, "11/2026", false), (.longYear, "1120260", false),
        // shortYearThenMonth (yymm)
        (.shortYearThenMonth, "2611", true), (.shortYearThenMonth, "2610", false), (.shortYearThenMonth, "4612", true),
        (.shortYearThenMonth, "4701", false), (.shortYearThenMonth, "2600", false),
        (.shortYearThenMonth, "2613", false),
        (.shortYearThenMonth, "1126", false), (.shortYearThenMonth, "261", false),
        // longYearThenMonth (yyyymm)
        (.longYearThenMonth, "202611", true), (.longYearThenMonth, "202610", false),
        (.longYearThenMonth, "204612", true),
        (.longYearThenMonth, "204701", false), (.longYearThenMonth, "203000", false),
        (.longYearThenMonth, "203013", false),
        (.longYearThenMonth, "112026", false), (.longYearThenMonth, "2611", false),
    ])
    func expiryWindowWithFixedToday(format: ExpDateFormat, input: String, valid: Bool) {
        #expect(CardExpirationDateRule(format: format).validate(input, in: fixedContext) == valid)
    }

    @Test func longYearInputFailsTheDefaultShortYearRule() {
        // ValidationRulesTest.testExpirationDateRule: "102027" is invalid under the defaults.
        #expect(!CardExpirationDateRule().validate("102027", in: fixedContext))
        #expect(CardExpirationDateRule(format: .longYear).validate("102027", in: fixedContext))
    }

    @Test func twoDigitYearsAreAlways20yyWithNoPivot() {
        let late = ValidationContext(today: CalendarDate(year: 2090, month: 1, day: 1)!)
        #expect(CardExpirationDateRule().validate("0199", in: late))  // 2099, within +20
        #expect(!CardExpirationDateRule().validate("0100", in: late))  // 2000, not 2100
        let early = ValidationContext(today: CalendarDate(year: 2001, month: 6, day: 1)!)
        #expect(CardExpirationDateRule().validate("0601", in: early))
        #expect(CardExpirationDateRule().validate("1221", in: early))
        #expect(!CardExpirationDateRule().validate("0199", in: early))  // 2099, not 1999 and too far ahead
    }

    @Test func januaryAndDecemberBoundaries() {
        let january = ValidationContext(today: CalendarDate(year: 2027, month: 1, day: 1)!)
        #expect(!CardExpirationDateRule().validate("1226", in: january))
        #expect(CardExpirationDateRule().validate("0127", in: january))
        #expect(CardExpirationDateRule().validate("1247", in: january))
        #expect(!CardExpirationDateRule().validate("0148", in: january))
        let december = ValidationContext(today: CalendarDate(year: 2026, month: 12, day: 31)!)
        #expect(CardExpirationDateRule().validate("1226", in: december))
        #expect(!CardExpirationDateRule().validate("1126", in: december))
    }

    @Test func theDayOfTheMonthDoesNotMatter() {
        for day in [1, 15, 30] {
            let context = ValidationContext(today: CalendarDate(year: 2026, month: 11, day: day)!)
            #expect(CardExpirationDateRule().validate("1126", in: context))
        }
    }

    // MARK: today from the real clock

    static func realToday() -> CalendarDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        let c = calendar.dateComponents([.year, .month, .day], from: Date())
        return CalendarDate(year: c.year!, month: c.month!, day: c.day!)!
    }

    @Test(arguments: ExpDateFormat.allCases)
    func expiryWindowWithTheRealDate(format: ExpDateFormat) {
        let today = Self.realToday()
        let context = ValidationContext(today: today)
        let rule = CardExpirationDateRule(format: format)
        let previous = today.month == 1 ? (12, today.year - 1) : (today.month - 1, today.year)
        let next = today.month == 12 ? (1, today.year + 1) : (today.month + 1, today.year)

        #expect(rule.validate(expInput(month: today.month, year: today.year, format), in: context), "current month")
        #expect(rule.validate(expInput(month: next.0, year: next.1, format), in: context), "next month")
        #expect(!rule.validate(expInput(month: previous.0, year: previous.1, format), in: context), "previous month")
        #expect(rule.validate(expInput(month: 12, year: today.year + 20, format), in: context), "+20 years")
        #expect(rule.validate(expInput(month: 1, year: today.year + 20, format), in: context), "+20 years, January")
        #expect(!rule.validate(expInput(month: 1, year: today.year + 21, format), in: context), "+21 years")
        #expect(!rule.validate(expInput(month: 12, year: today.year - 1, format), in: context), "last year")

        let y = format.yearCharacters == 2 ? two((today.year + 1) % 100) : String(today.year + 1)
        for month in ["00", "13", "99"] {
            let input = format.isYearFirst ? y + month : month + y
            #expect(!rule.validate(input, in: context), "month \(month)")
        }
    }

    @Test(arguments: ExpDateFormat.allCases)
    func rawLengthMustBeExactlyMonthPlusYear(format: ExpDateFormat) {
        let good = expInput(month: 12, year: 2030, format)
        #expect(good.count == (format.yearCharacters == 2 ? 4 : 6))
        #expect(CardExpirationDateRule(format: format).validate(good, in: fixedContext))
        #expect(!CardExpirationDateRule(format: format).validate(good + "0", in: fixedContext))
        #expect(!CardExpirationDateRule(format: format).validate(String(good.dropLast()), in: fixedContext))
        #expect(!CardExpirationDateRule(format: format).validate("", in: fixedContext))
    }
}
