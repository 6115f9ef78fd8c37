import CloakCore
import Testing

/// JSON Lines an import reads (issue 60): an object of strings a line; a bad line refused alone
/// with its number; the same rows whether the bytes come at once or one at a time.
@Suite struct JSONLinesReaderTests {
    static func read(_ text: String, oneByOne: Bool, limit: Int = 65_536) -> [JSONLinesReader.Row] {
        var reader = JSONLinesReader(limit: limit)
        var rows: [JSONLinesReader.Row] = []
        let bytes = Array(text.utf8)
        if oneByOne {
            for byte in bytes { rows += reader.feed([byte]) }
        } else {
            rows += reader.feed(bytes)
        }
        if let last = reader.finish() { rows.append(last) }
        return rows
    }

    @Test(arguments: [false, true])
    func linesAreObjectsOfStrings(oneByOne: Bool) {
        let text = """
            {"id":"c-1","card_number":"4111111111111111"}\r

            {"id":"c-2","card_number":4111111111111111}
            [1,2]
            {"id":"c-3","id":"c-4"}
            not json
            {"id":"c-5","note":"a \\"quoted\\" line,\\nwith an escape"}
            """
        #expect(
            Self.read(text, oneByOne: oneByOne) == [
                .object(["id": "c-1", "card_number": "4111111111111111"], line: 1),
                .refused(line: 3, .notAString(key: "card_number")),
                .refused(line: 4, .notAnObject),
                .refused(line: 5, .notJSON),  // a key twice: the parser refuses it
                .refused(line: 6, .notJSON),
                .object(["id": "c-5", "note": "a \"quoted\" line,\nwith an escape"], line: 7),
            ])
    }

    @Test func aLongLineIsRefusedAndMemoryStaysBounded() {
        let long = "{\"id\":\"" + String(repeating: "9", count: 100) + "\"}"
        #expect(
            Self.read(long + "\n{\"id\":\"ok\"}\n", oneByOne: false, limit: 32) == [
                .refused(line: 1, .lineTooLong(limit: 32)), .object(["id": "ok"], line: 2),
            ])
    }
}
