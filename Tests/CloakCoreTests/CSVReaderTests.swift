import CloakCore
import Testing

/// The CSV an import reads (issue 60): RFC 4180 quoting, byte order marks, CRLF, blank lines;
/// a bad row refused alone, with the line it starts on; an open quote at the end fatal; the same
/// rows whether the bytes come at once or one at a time.
@Suite struct CSVReaderTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var input: String
        var rows: [CSVReader.Row]
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "plain", input: "id,card\n1,4111\n",
            rows: [.fields(["id", "card"], line: 1), .fields(["1", "4111"], line: 2)]),
        Case(
            name: "no final line end", input: "a,b\n1,2",
            rows: [.fields(["a", "b"], line: 1), .fields(["1", "2"], line: 2)]),
        Case(
            name: "CRLF", input: "a,b\r\n1,2\r\n", rows: [.fields(["a", "b"], line: 1), .fields(["1", "2"], line: 2)]),
        Case(name: "lone CR", input: "a\r1\r", rows: [.fields(["a"], line: 1), .fields(["1"], line: 2)]),
        Case(
            name: "byte order mark", input: "\u{FEFF}id,card\n1,2\n",
            rows: [.fields(["id", "card"], line: 1), .fields(["1", "2"], line: 2)]),
        Case(
            name: "blank lines skipped, lines still counted", input: "\n\na\r\n\r\n\nb\n",
            rows: [.fields(["a"], line: 3), .fields(["b"], line: 6)]),
        Case(
            name: "quotes, commas, doubled quotes", input: "\"a,b\",\"say \"\"hi\"\"\",\"\"\n",
            rows: [.fields(["a,b", "say \"hi\"", ""], line: 1)]),
        Case(
            name: "a line end inside quotes", input: "\"one\r\ntwo\",x\nnext\n",
            rows: [.fields(["one\r\ntwo", "x"], line: 1), .fields(["next"], line: 3)]),
        Case(name: "empty fields", input: ",,\n", rows: [.fields(["", "", ""], line: 1)]),
        Case(name: "spaces are kept", input: " a , b \n", rows: [.fields([" a ", " b "], line: 1)]),
        Case(
            name: "a quote inside an unquoted field", input: "ab\"c,d\nok\n",
            rows: [.refused(line: 1, .quoteInUnquotedField), .fields(["ok"], line: 2)]),
        Case(
            name: "text after a closing quote", input: "\"ab\"c,d\nok\n",
            rows: [.refused(line: 1, .textAfterClosingQuote), .fields(["ok"], line: 2)]),
        Case(name: "a quoted empty line is a row", input: "\"\"\n", rows: [.fields([""], line: 1)]),
    ]

    static func read(_ bytes: [UInt8], oneByOne: Bool, limits: CSVReader.Limits = .init()) throws -> [CSVReader.Row] {
        var reader = CSVReader(limits: limits)
        var rows: [CSVReader.Row] = []
        if oneByOne {
            for byte in bytes { rows += reader.feed([byte]) }
        } else {
            rows += reader.feed(bytes)
        }
        if let last = try reader.finish() { rows.append(last) }
        return rows
    }

    @Test(arguments: cases)
    func rowsAreReadWhicheverWayTheBytesCome(_ test: Case) throws {
        let bytes = Array(test.input.utf8)
        #expect(try Self.read(bytes, oneByOne: false) == test.rows)
        #expect(try Self.read(bytes, oneByOne: true) == test.rows)
    }

    @Test func anOpenQuoteAtTheEndIsFatal() {
        #expect(throws: CSVReader.Problem.unclosedQuote(line: 2)) {
            try Self.read(Array("a\n\"b,c\nd\n".utf8), oneByOne: false)
        }
    }

    @Test func bytesThatAreNotUTF8RefuseTheirRowOnly() throws {
        let rows = try Self.read([0x61, 0xFF, 0x2C, 0x62, 0x0A] + Array("ok\n".utf8), oneByOne: false)
        #expect(rows == [.refused(line: 1, .notUTF8), .fields(["ok"], line: 2)])
        // A byte order mark's first bytes, then something else: text, not a mark (and here not UTF-8).
        #expect(try Self.read([0xEF, 0xBB, 0x61, 0x0A], oneByOne: true) == [.refused(line: 1, .notUTF8)])
    }

    @Test func limitsRefuseARowAndKeepMemoryBounded() throws {
        let limits = CSVReader.Limits(rowBytes: 16, fields: 3)
        let long = String(repeating: "9", count: 40)
        let rows = try Self.read(
            Array("\(long)\na,b,c,d\n\"\(long)\n\(long)\"\nfine,row\n".utf8), oneByOne: false, limits: limits)
        #expect(
            rows == [
                .refused(line: 1, .rowTooLong(limit: 16)), .refused(line: 2, .tooManyFields(limit: 3)),
                .refused(line: 3, .rowTooLong(limit: 16)), .fields(["fine", "row"], line: 5),
            ])
    }
}
