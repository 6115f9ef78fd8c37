import Foundation
import Testing

@testable import CloakCore

/// BIN tables (issue 48): the most specific range answers, imports are refused whole with every
/// problem's line, and the canonical form reads back to the same table.
@Suite struct BinTableTests {
    static let csv = """
        low,high,brand,funding,segment,issuer,country,currency,product,unused
        411111,411111,visa,credit,consumer,"Bank, of Tests",US,USD,Classic,x
        41111100,41111199,visa,debit,,Other Bank,ca,cad,,y
        4111110000,4111119999,visa,prepaid,commercial,Prepaid Co,GB,GBP,,z
        520000,529999,mastercard,credit,,,DE,EUR,,
        5200000000000000001,5200000000000000009,mastercard,charge,,,XK,EUR,,
        """

    static func table(_ text: String = csv, format: BinTableReader.Format = .csv) throws -> BinTable {
        BinTable(try BinTableReader(format: format, ignored: ["unused"]).read(Array(text.utf8)))
    }

    @Test(
        arguments: [
            ("411111", "Bank, of Tests"), ("4111111", "Bank, of Tests"), ("41111111", "Other Bank"),
            ("411111111", "Other Bank"), ("4111111111", "Prepaid Co"),
            ("4111111111111111", "Prepaid Co"), ("5234567890", nil), ("5200000000000000005", nil),
        ] as [(String, String?)])
    func theMostSpecificRangeOfAtMostTheQuerysLengthAnswers(query: String, issuer: String?) throws {
        let found = try Self.table().lookup(query)
        #expect(found?.issuer == issuer, "\(query)")
    }

    @Test func aRangeLongerThanTheQueryNeverAnswers() throws {
        let table = try Self.table()
        // Eight digits: the 10-digit prepaid range cannot answer, however it would match.
        #expect(table.lookup("41111111")?.funding == .debit)
        #expect(table.lookup("4111111100")?.funding == .prepaid)
        #expect(table.lookup("5200000000000000005")?.brand == "mastercard")
        #expect(table.lookup("5200000000000000005")?.country == "XK")
        #expect(table.lookup("52000") == nil)
        #expect(table.lookup("52x000") == nil)
        #expect(table.lookup("999999") == nil)
        #expect(table.count == 5)
        #expect(table.lookup("41111150")?.country == "CA" && table.lookup("41111150")?.currency == "CAD")
    }

    /// Issue 57: a column Cloak does not read is refused unless named to be ignored (a vendor's
    /// `bank` without `--map bank=issuer` would import a table without issuers).
    @Test func anUnknownColumnIsRefusedUnlessIgnored() throws {
        let csv = Array("low,high,bank\n411111,411111,A Bank\n".utf8)
        let refusal = #expect(throws: BinTableReader.Refusal.self) { try BinTableReader(format: .csv).read(csv) }
        #expect(refusal?.problems.first?.contains(#"line 1: unknown column "bank""#) == true)
        #expect(try BinTableReader(format: .csv, ignored: ["bank"]).read(csv).rows.count == 1)
        let jsonl = Array(
            #"{"low":"411111","high":"411111","bank":"A"}\#n{"low":"411112","high":"411112","bank":"B"}"#.utf8)
        let once = #expect(throws: BinTableReader.Refusal.self) { try BinTableReader(format: .jsonl).read(jsonl) }
        #expect(once?.problems.count == 1, "each unknown key is named once")
    }

    @Test func jsonLinesAndMappedColumnsReadTheSame() throws {
        let jsonl = """
            {"start":"411111","high":"411111","brand":"visa","type":"credit","bank":"Bank, of Tests","country":"US"}
            {"start":"520000","high":"529999","brand":"mastercard","type":"debit","extra":{"a":1}}
            """
        let table = try BinTableReader(
            format: .jsonl, mapping: BinTableReader.mapping("start=low,type=funding,bank=issuer")!, ignored: ["extra"]
        )
        .read(Array(jsonl.utf8))
        #expect(table.rows.count == 2)
        #expect(table.attributes(of: table.rows[0]).issuer == "Bank, of Tests")
        #expect(table.attributes(of: table.rows[1]).funding == .debit)
        #expect(BinTableReader.mapping("a=nothing") == nil)
    }

    @Test func theCanonicalFormReadsBackToTheSameRows() throws {
        let table = try BinTableReader(format: .csv, ignored: ["unused"]).read(Array(Self.csv.utf8))
        let again = try BinTableReader(format: .csv).read(BinTableReader.canonicalCSV(table))
        #expect(again.rows.map(again.attributes(of:)) == table.rows.map(table.attributes(of:)))
        #expect(again.rows.map(\.low) == table.rows.map(\.low) && again.rows.map(\.high) == table.rows.map(\.high))
        // Leading zeros are kept: a range's length is part of what it means.
        let zeros = try BinTableReader(format: .csv).read(Array("low,high\n0000001,0000009\n".utf8))
        #expect(String(decoding: BinTableReader.canonicalCSV(zeros), as: UTF8.self).contains("0000001,0000009"))
    }

    @Test(arguments: [
        ("low,high\n411111,411112\n411112,411119\n", "lines 2 and 3: ranges of 6 digits overlap"),
        ("low,high\n411111,41111\n", "line 2: low and high have different lengths (6 and 5)"),
        ("low,high\n41111,41111\n", "line 2: a range has 6 to 19 digits, not 5"),
        ("low,high\n411119,411111\n", "line 2: low is above high"),
        ("low,high\n4111a1,411111\n", "line 2: low and high are digits only"),
        ("low,high,country\n411111,411111,ZZ\n", "line 2: country is not an ISO 3166-1 alpha-2 code"),
        ("low,high,currency\n411111,411111,XYZ\n", "line 2: currency is not an ISO 4217 code"),
        (
            "low,high,funding\n411111,411111,gift\n",
            "line 2: funding is one of credit, debit, prepaid, charge, deferred_debit or empty"
        ),
        ("low,high,segment\n411111,411111,retail\n", "line 2: segment is consumer, commercial or empty"),
        ("low,high,issuer\n411111,411111,\"open\n", "line 2: a quoted field is not closed"),
        (
            "start,end\n411111,411111\n",
            "line 1: no column low (columns: low, high, brand, funding, segment, issuer, country, currency, product)"
        ),
        ("", "the table is empty (no header line)"),
    ])
    func hostileImportsAreRefusedNamingTheirLines(text: String, problem: String) {
        let refusal = #expect(throws: BinTableReader.Refusal.self) {
            try BinTableReader(format: .csv).read(Array(text.utf8))
        }
        #expect(refusal?.problems.contains(problem) == true, "\(refusal?.problems ?? [])")
    }

    @Test func wrongEncodingsAndHugeLinesAreRefused() {
        let latin1: [UInt8] = Array("low,high,issuer\n411111,411111,Caf".utf8) + [0xE9] + [0x0A]
        let a = #expect(throws: BinTableReader.Refusal.self) { try BinTableReader(format: .csv).read(latin1) }
        #expect(a?.problems == ["line 2: not UTF-8"])
        let huge = Array("low,high,issuer\n411111,411111,".utf8) + [UInt8](repeating: 0x41, count: 5000) + [0x0A]
        let b = #expect(throws: BinTableReader.Refusal.self) { try BinTableReader(format: .csv).read(huge) }
        #expect(b?.problems == ["line 2: longer than 4096 bytes"])
        var many = "low,high\n"
        for i in 0..<50 { many += "41111\(i % 10),x\n" }
        let c = #expect(throws: BinTableReader.Refusal.self) { try BinTableReader(format: .csv).read(Array(many.utf8)) }
        #expect(c?.problems.count == BinTableReader.maxProblems && c?.more == 30)
    }

    @Test func attributesRoundTripAsJSON() {
        let a = CardAttributes(brand: "visa", funding: .deferredDebit, segment: .commercial, country: "US")
        #expect(CardAttributes(json: a.json) == a)
        #expect(
            JSONWriter.encode(a.json)
                == Array(#"{"brand":"visa","funding":"deferred_debit","segment":"commercial","country":"US"}"#.utf8))
    }
}

/// Card attributes in a card number's field state: from the digits the state shows as `bin`,
/// never more, and only when it shows one.
@Suite struct CardAttributesStateTests {
    static let table = BinTable(
        try! BinTableReader(format: .csv).read(
            Array(
                """
                low,high,issuer,funding,country
                411111,411111,Six Digit Bank,credit,US
                4111111111,4111111111,Ten Digit Bank,debit,CA
                378282,378282,Amex Bank,charge,US
                """.utf8)))

    static func state(_ number: String) throws -> [String: Any] {
        var field = FieldSchema(name: "card", type: .cardNumber)
        field.isRequired = true
        let form = FormSchema(name: "f", fields: [field])
        var context = ValidationContext(today: CalendarDate(year: 2026, month: 11, day: 26)!)
        context.bins = table
        let validation = FormValidation(form: form, values: [number], context: context)
        let json = try JSONSerialization.jsonObject(with: Data(validation.stateJSON)) as? [String: Any]
        return try #require((json?["fields"] as? [String: Any])?["card"] as? [String: Any])
    }

    @Test func theAttributesOfTheBinShownAndNoMore() throws {
        // Visa, 16 digits: the state shows 8 digits, so the 10-digit range cannot answer.
        let visa = try Self.state("4111 1111 1111 1111")
        #expect(visa["bin"] as? String == "41111111")
        let attributes = try #require(visa["cardAttributes"] as? [String: String])
        #expect(attributes == ["issuer": "Six Digit Bank", "funding": "credit", "country": "US"])
        // Amex: six digits shown.
        let amex = try Self.state("378282246310005")
        #expect((amex["cardAttributes"] as? [String: String])?["funding"] == "charge")
    }

    @Test func noBinShownNoAttributes() throws {
        // Invalid (Luhn), and too short for an 8-digit BIN: no bin, no attributes.
        #expect(try Self.state("4111 1111 1111 1112")["cardAttributes"] == nil)
        #expect(try Self.state("4111 1111 1111")["cardAttributes"] == nil)
        // Valid, but no range holds it.
        #expect(try Self.state("5555 5555 5555 4444")["cardAttributes"] == nil)
    }
}

/// A card field's `accept` rule: refused by what the table knows, the state still showing bin and
/// attributes so the page can say why; a card the table does not know passes.
@Suite struct CardAcceptRuleTests {
    static func state(_ number: String, rule: CardAcceptRule) throws -> [String: Any] {
        var field = FieldSchema(name: "card", type: .cardNumber)
        field.accept = rule
        let form = FormSchema(name: "f", fields: [field])
        var context = ValidationContext(today: CalendarDate(year: 2026, month: 11, day: 26)!)
        context.bins = CardAttributesStateTests.table
        let json =
            try JSONSerialization.jsonObject(
                with: Data(FormValidation(form: form, values: [number], context: context).stateJSON)) as? [String: Any]
        return try #require((json?["fields"] as? [String: Any])?["card"] as? [String: Any])
    }

    @Test func aRefusedCardStillShowsWhy() throws {
        let rule = CardAcceptRule(funding: [.debit], countries: ["US"])
        let refused = try Self.state("4111 1111 1111 1111", rule: rule)  // credit, US
        #expect(refused["isValid"] as? Bool == false)
        #expect(refused["validationErrors"] as? [String] == ["CARD_NOT_ACCEPTED"])
        #expect(refused["bin"] as? String == "41111111" && refused["last4"] as? String == "1111")
        #expect((refused["cardAttributes"] as? [String: String])?["funding"] == "credit")
        let custom = try Self.state("378282246310005", rule: CardAcceptRule(countries: ["CA"], error: "AMEX_CA_ONLY"))
        #expect(custom["validationErrors"] as? [String] == ["AMEX_CA_ONLY"])
    }

    @Test func anAcceptedOrUnknownCardPasses() throws {
        #expect(
            try Self.state("4111 1111 1111 1111", rule: CardAcceptRule(funding: [.credit]))["isValid"] as? Bool == true)
        #expect(
            try Self.state("5555 5555 5555 4444", rule: CardAcceptRule(funding: [.debit]))["isValid"] as? Bool == true)
        // An invalid card shows neither bin nor attributes, and no accept error on top.
        let invalid = try Self.state("4111 1111 1111 1112", rule: CardAcceptRule(funding: [.debit]))
        #expect(
            invalid["bin"] as? String == ""
                && !(invalid["validationErrors"] as? [String] ?? []).contains("CARD_NOT_ACCEPTED"))
    }
}

/// The table as the store keeps it: read back to the same lookups; anything damaged refused.
@Suite struct BinTableEncodingTests {
    @Test func theEncodedTableReadsBackTheSame() throws {
        let table = try BinTableReader(format: .csv, ignored: ["unused"]).read(Array(BinTableTests.csv.utf8))
        let decoded = try #require(BinTableReader.Table(decoding: table.encoded()))
        #expect(decoded.rows.map(\.low) == table.rows.map(\.low) && decoded.rows.map(\.high) == table.rows.map(\.high))
        #expect(decoded.rows.map(decoded.attributes(of:)) == table.rows.map(table.attributes(of:)))
        for query in ["411111", "41111150", "4111111111111111", "5200000000000000005", "999999"] {
            #expect(BinTable(decoded).lookup(query) == BinTable(table).lookup(query), "\(query)")
        }
    }

    @Test func aDamagedEncodingIsRefused() throws {
        let bytes = try BinTableReader(format: .csv, ignored: ["unused"]).read(Array(BinTableTests.csv.utf8)).encoded()
        #expect(BinTableReader.Table(decoding: Array(bytes.dropLast())) == nil)
        #expect(BinTableReader.Table(decoding: bytes + [0]) == nil)
        #expect(BinTableReader.Table(decoding: Array(bytes.dropFirst())) == nil)
        var badIndex = bytes
        badIndex[badIndex.count - 1] = 0xFF  // the last row's attribute index, out of range
        #expect(BinTableReader.Table(decoding: badIndex) == nil)
        var badLength = bytes
        badLength[badLength.count - 21] = 5  // the last row's length, under six digits
        #expect(BinTableReader.Table(decoding: badLength) == nil)
    }
}
