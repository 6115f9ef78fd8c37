import CloakCore
import Testing

/// Review V, item 10: the layouts of an expiry an import reads, written as the field takes it.
struct ExpiryLayoutsTests {
    @Test(arguments: [
        ("12/30", "12/30"), ("12/2030", "12/30"), ("1/30", "01/30"), ("1/2030", "01/30"), ("12-30", "12/30"),
        ("12.2030", "12/30"), ("12 30", "12/30"), (" 12/30 ", "12/30"), ("1230", "12/30"), ("122030", "12/30"),
        ("2030-12", "12/30"), ("2030/1", "01/30"),
    ])
    func layoutsAreReadIntoTheShortYear(given: String, written: String) {
        #expect(ExpiryLayouts.normalize(given, to: .shortYear) == written)
    }

    @Test func eachFormatWritesItsOwnLayout() {
        #expect(ExpiryLayouts.normalize("1/30", to: .longYear) == "01/2030")
        #expect(ExpiryLayouts.normalize("12/2030", to: .shortYearThenMonth) == "30/12")
        #expect(ExpiryLayouts.normalize("12/2030", to: .longYearThenMonth) == "2030/12")
        #expect(ExpiryLayouts.combine(month: "7", year: "2031", to: .shortYear) == "07/31")
        #expect(ExpiryLayouts.combine(month: "07", year: "31", to: .longYear) == "07/2031")
    }

    @Test(arguments: ["", "13/30", "0/30", "12/3", "12/303", "12//30", "ab/cd", "12/30/1", "１２/３０", "123", "12/1999"])
    func anythingElseIsLeftForTheFieldsRules(given: String) {
        #expect(ExpiryLayouts.normalize(given, to: .shortYear) == nil)
    }

    @Test func partsThatAreNotAMonthAndAYearAreNotCombined() {
        #expect(ExpiryLayouts.combine(month: "13", year: "30", to: .shortYear) == nil)
        #expect(ExpiryLayouts.combine(month: "1", year: "3", to: .shortYear) == nil)
        #expect(ExpiryLayouts.combine(month: "x", year: "30", to: .shortYear) == nil)
    }
}
