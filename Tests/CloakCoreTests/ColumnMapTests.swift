import CloakCore
import Testing

/// An import's columns (issue 60): renamed by the map, unknown ones refused unless ignored by
/// name, each column once, the required ones present, a security code refused whatever it is
/// called; each row as wide as the header.
@Suite struct ColumnMapTests {
    static let reads = ["id", "card_number", "exp_month", "exp_year"]
    static let required = ["id", "card_number"]
    static let forbidden = ["cvc": "a security code may not be stored", "cvv": "a security code may not be stored"]

    static func map(_ header: [String], mapping: [String: String] = [:], ignored: Set<String> = []) throws(ColumnMap
        .Problem) -> ColumnMap
    {
        try ColumnMap(
            header: header, reads: reads, required: required, mapping: mapping, ignored: ignored, forbidden: forbidden)
    }

    @Test func aMappedHeaderGivesEachRowItsValues() throws {
        let map = try Self.map(
            ["customer_ref", " pan ", "notes", "exp_month"], mapping: ["customer_ref": "id", "pan": "card_number"],
            ignored: ["notes"])
        #expect(
            try map.values(["c-1", "4111111111111111", "likes tea", "12"]) == [
                "id": "c-1", "card_number": "4111111111111111", "exp_month": "12",
            ])
        #expect(throws: ColumnMap.RowProblem.fieldCount(expected: 4, found: 3)) {
            try map.values(["c-1", "4111", "x"])
        }
        #expect(throws: ColumnMap.RowProblem.fieldCount(expected: 4, found: 5)) {
            try map.values(["c-1", "4111", "x", "1", "extra"])
        }
    }

    @Test func headersThatCannotBeReadAreRefusedByName() {
        #expect(throws: ColumnMap.Problem.unknown("pan", known: Self.reads)) { try Self.map(["id", "pan"]) }
        #expect(throws: ColumnMap.Problem.twice("card_number")) {
            try Self.map(["id", "card_number", "pan"], mapping: ["pan": "card_number"])
        }
        #expect(throws: ColumnMap.Problem.missing("card_number")) { try Self.map(["id", "exp_month"]) }
        // A security code is refused by its name, mapped or not, ignored or not.
        #expect(throws: ColumnMap.Problem.forbidden("CVC", reason: "a security code may not be stored")) {
            try Self.map(["id", "card_number", "CVC"], ignored: ["CVC"])
        }
        #expect(throws: ColumnMap.Problem.forbidden("code", reason: "a security code may not be stored")) {
            try ColumnMap(
                header: ["id", "card_number", "code"], reads: Self.reads + ["cvv"], required: Self.required,
                mapping: ["code": "cvv"], forbidden: Self.forbidden)
        }
    }

    @Test func theMapIsSourceEqualsColumn() throws {
        #expect(
            try ColumnMap.mapping("ref=id, pan = card_number", reads: Self.reads) == [
                "ref": "id", "pan": "card_number",
            ])
        #expect(throws: ColumnMap.Problem.badMapping("pan")) { try ColumnMap.mapping("pan", reads: Self.reads) }
        #expect(throws: ColumnMap.Problem.badMapping("pan=number")) {
            try ColumnMap.mapping("pan=number", reads: Self.reads)
        }
        #expect(throws: ColumnMap.Problem.badMapping("=id")) { try ColumnMap.mapping("=id", reads: Self.reads) }
    }

    @Test func problemsNameTheWayOut() {
        let text = "\(ColumnMap.Problem.unknown("pan", known: ["id", "card_number"]))"
        #expect(text.contains("--map pan=COLUMN") && text.contains("--ignore-columns pan"))
        #expect("\(ColumnMap.RowProblem.fieldCount(expected: 4, found: 3))" == "3 fields where the header has 4")
    }
}
