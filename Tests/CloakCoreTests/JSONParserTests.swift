import Testing

@testable import CloakCore

private func parseError(_ text: String, maxDepth: Int = 64) -> JSONParseError? {
    parseError(Array(text.utf8), maxDepth: maxDepth)
}

private func parseError(_ bytes: [UInt8], maxDepth: Int = 64) -> JSONParseError? {
    do {
        _ = try JSONParser(maxDepth: maxDepth).parse(bytes)
        return nil
    } catch {
        return error
    }
}

private func nested(_ depth: Int, open: String = "[", close: String = "]", inner: String = "") -> String {
    String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
}

@Suite struct JSONParserTests {
    @Test func parsesObjectsKeepingMemberOrder() throws {
        let v = try JSONParser().parse(#" { "z" : 1 , "a" : [true, false, null], "m": {"k": "v"} } "#)
        #expect(
            v
                == .object([
                    ("z", .number("1")),
                    ("a", .array([.bool(true), .bool(false), .null])),
                    ("m", .object([("k", .string("v"))])),
                ]))
        #expect(v.objectMembers?.map(\.key) == ["z", "a", "m"])
    }

    @Test(arguments: ["0", "-0", "1", "-1", "12.5", "-0.5e+10", "1E5", "1e-5", "123456789012345678901234567890"])
    func numbersKeepTheirSourceText(text: String) throws {
        #expect(try JSONParser().parse(text) == .number(text))
    }

    @Test(arguments: [#""""#, "true", "false", "null", "[]", "{}", " \t\r\n1\n"])
    func acceptsEveryTopLevelValue(text: String) throws {
        _ = try JSONParser().parse(text)
    }

    /// Defect 6 of the security review: a repeated member is refused at any depth. Upstream
    /// parsers that keep the last one would read an attacker's `card_data` instead of the alias.
    @Test(arguments: [
        #"{"a":"1","a":"2"}"#,
        #"{"fields":{},"fields":{}}"#,
        #"{"fields": {"card": "4111111111111111", "cvc": "123", "card": "5555555555554444"}}"#,
        #"{"extraData":{"card_data":{},"card_data":{"card_number":"4111111111111111"}}}"#,
        #"[{"x":[{"deep":{"k":1,"k":1}}]}]"#,
        "{" + (0..<40).map { #""m\#($0)":0,"# }.joined() + #""m7":1}"#,  // past the linear scan
        #"{"a":1,"a":2}"#,  // the same name, escaped
    ])
    func duplicateMembersAreRefusedAtAnyDepth(json: String) throws {
        let error = try #require(throws: JSONParseError.self) { try JSONParser().parse(json) }
        #expect(error.reason == .duplicateKey)
        #expect(!error.description.contains("4111"))
    }

    @Test func distinctMembersOfLargeAndNestedObjectsParse() throws {
        let text = "{" + (0..<40).map { #""m\#($0)":{"m\#($0)":0}"# }.joined(separator: ",") + "}"
        #expect(try JSONParser().parse(text).objectMembers?.count == 40)
    }

    @Test func decodesEveryEscape() throws {
        let v = try JSONParser().parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\u0000""#)
        #expect(v == .string("\"\\/\u{08}\u{0C}\n\r\tAé€😀\u{00}"))
    }

    @Test func keepsRawUTF8() throws {
        #expect(try JSONParser().parse("\"héllo €😀\"") == .string("héllo €😀"))
    }

    // MARK: hostile input

    @Test(
        arguments: [
            [0x22, 0xFF, 0x22],  // never valid in UTF-8
            [0x22, 0xC0, 0xAF, 0x22],  // overlong "/"
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate U+D800
            [0x22, 0xE2, 0x82, 0x22],  // truncated three-byte sequence
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // beyond U+10FFFF
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x31, 0x7D, 0x80],  // stray continuation byte after a valid document
        ] as [[UInt8]])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        #expect(parseError(bytes)?.reason == .invalidUTF8)
    }

    @Test(arguments: [
        #""\ud800""#, #""\uDBFF""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud800x""#, #""\ud800\ud800""#,
        #""\ude00\ud83d""#,
    ])
    func rejectsLoneSurrogateEscapes(text: String) {
        #expect(parseError(text)?.reason == .invalidEscape)
    }

    @Test(arguments: [#""\x""#, #""\u12G4""#, #""\U0041""#, #""\'""#, #""\a""#])
    func rejectsInvalidEscapes(text: String) {
        #expect(parseError(text)?.reason == .invalidEscape)
    }

    @Test(arguments: Array(0x00...0x1F) as [UInt8])
    func rejectsRawControlCharactersInStrings(byte: UInt8) {
        // Both the fast path (no escape before it) and the slow path (after an escape).
        #expect(parseError([0x22, 0x61, byte, 0x62, 0x22])?.reason == .controlCharacterInString)
        #expect(parseError([0x22, 0x5C, 0x6E, byte, 0x22])?.reason == .controlCharacterInString)
        #expect(parseError([0x7B, 0x22, byte, 0x22, 0x3A, 0x31, 0x7D])?.reason == .controlCharacterInString)
    }

    @Test func acceptsDELInStrings() throws {
        #expect(try JSONParser().parse([0x22, 0x7F, 0x22]) == .string("\u{7F}"))
    }

    @Test func sixtyFourLevelsOfNestingPass() throws {
        _ = try JSONParser().parse(nested(64))
        _ = try JSONParser().parse(nested(64, open: "{\"a\":", close: "}", inner: "1"))
        // Alternating arrays and objects, 64 levels in all.
        let mixed = String(repeating: "[{\"k\":", count: 32) + "1" + String(repeating: "}]", count: 32)
        _ = try JSONParser().parse(mixed)
        #expect(parseError("[" + mixed + "]")?.reason == .tooDeep)
    }

    @Test func sixtyFiveLevelsOfNestingFailAsTooDeep() {
        #expect(parseError(nested(65))?.reason == .tooDeep)
        #expect(parseError(nested(65, open: "{\"a\":", close: "}", inner: "1"))?.reason == .tooDeep)
        #expect(parseError("[" + nested(64, open: "{\"a\":", close: "}", inner: "1") + "]")?.reason == .tooDeep)
    }

    @Test func customMaxDepthIsHonoured() throws {
        _ = try JSONParser(maxDepth: 2).parse("[[1]]")
        #expect(parseError("[[[1]]]", maxDepth: 2)?.reason == .tooDeep)
    }

    @Test func hugeNestingFailsWithoutExhaustingTheStack() {
        #expect(parseError(String(repeating: "[", count: 200_000))?.reason == .tooDeep)
        #expect(parseError(String(repeating: "{\"a\":", count: 200_000))?.reason == .tooDeep)
    }

    @Test(arguments: ["{} {}", "1 2", "[]x", #""a""b""#, "{}}", "[]]", "null,", "01", "-01", "truex"])
    func rejectsTrailingData(text: String) {
        #expect(parseError(text)?.reason == .trailingData)
    }

    @Test func trailingWhiteSpaceIsAllowed() throws {
        #expect(try JSONParser().parse("{} \n\t\r ") == .object([]))
    }

    @Test(arguments: [
        "", "   ", "{", "[", #"{"a""#, #"{"a":"#, #"{"a":1"#, #"{"a":1,"#, "[1,", "[1", #""abc"#, #""a\"#,
        "tru", "fals", "nul", #""\u12"#, #""\ud83d\u"#, "-",
    ])
    func rejectsTruncatedDocuments(text: String) {
        #expect(parseError(text)?.reason == .unexpectedEnd)
    }

    @Test(arguments: ["1.", "1e", "1e+", "1E-", "-a", "1.e5", "--1", "-.5", "0.x"])
    func rejectsMalformedNumbers(text: String) {
        #expect(parseError(text)?.reason == .invalidNumber)
    }

    @Test(arguments: [
        "+1", ".5", "NaN", "Infinity", "-Infinity", "0x10", "'a'", "True", "nulL", "{,}", "[1,]",
        #"{"a" 1}"#, "{1:2}", #"{"a":1,}"#, "[,1]", #"{"a":1 "b":2}"#, "[1 2]", "undefined",
    ])
    func rejectsOtherMalformedDocuments(text: String) {
        #expect(parseError(text) != nil)
    }

    @Test func errorDescriptionsNeverQuoteTheDocument() {
        for text in [
            #"{"card": 4111111111111111x}"#, #"{"card": "4111111111111111"#, #"{"card": "4111111111111111\q"}"#,
        ] {
            let error = parseError(text)
            #expect(error != nil)
            #expect(!(error?.description.contains("4111") ?? true))
        }
    }

    // MARK: big input

    @Test func parsesAMegabyteString() throws {
        let body = String(repeating: "abcdefgh", count: 131_072)
        #expect(try JSONParser().parse("\"" + body + "\"") == .string(body))
        let escaped = String(repeating: #"\n"#, count: 100_000)
        #expect(try JSONParser().parse("\"" + escaped + "\"") == .string(String(repeating: "\n", count: 100_000)))
    }

    @Test func parsesLargeArraysAndObjects() throws {
        let array = "[" + (0..<100_000).map(String.init).joined(separator: ",") + "]"
        guard case let .array(elements) = try JSONParser().parse(array) else {
            Issue.record("not an array")
            return
        }
        #expect(elements.count == 100_000)
        #expect(elements.last == .number("99999"))

        let object = "{" + (0..<10_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        let members = try JSONParser().parse(object).objectMembers
        #expect(members?.count == 10_000)
        #expect(members?.first?.key == "k0")
    }
}

@Suite struct JSONWriterTests {
    @Test func writesCompactJSONInMemberOrder() {
        let v: JSONValue = .object([
            ("b", .int(1)), ("a", .array([.bool(true), .null, .string("x")])), ("n", .number("-1.5e3")),
        ])
        #expect(JSONWriter.string(v) == #"{"b":1,"a":[true,null,"x"],"n":-1.5e3}"#)
        #expect(JSONWriter.string(.object([])) == "{}")
        #expect(JSONWriter.string(.array([])) == "[]")
    }

    @Test(arguments: [
        ("\"", #""\"""#), ("\\", #""\\""#), ("\n", #""\n""#), ("\r", #""\r""#), ("\t", #""\t""#),
        ("\u{00}", #""\u0000""#), ("\u{08}", #""\u0008""#), ("\u{0C}", #""\u000c""#), ("\u{1F}", #""\u001f""#),
        ("/", #""/""#), ("é€😀", "\"é€😀\""), ("\u{7F}", "\"\u{7F}\""),
    ])
    func escapesStrings(raw: String, encoded: String) {
        #expect(JSONWriter.string(.string(raw)) == encoded)
    }

    @Test func escapesKeysToo() {
        #expect(JSONWriter.string(.object([("a\"b\n", .null)])) == #"{"a\"b\n":null}"#)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let all = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) }))
        let written = JSONWriter.encode(.string(all))
        #expect(!written.contains { $0 < 0x20 })
        #expect(try JSONParser().parse(written) == .string(all))
    }

    @Test func documentsRoundTrip() throws {
        let samples: [JSONValue] = [
            .null, .bool(true), .bool(false), .number("0"), .number("-12.5e-3"), .string(""),
            .string("quote \" backslash \\ slash / tab \t nl \n cr \r nul \u{00} emoji 😀 é"),
            .array([.array([.array([])]), .object([("", .string(""))])]),
            .object([
                ("fields", .object([("card", .string("4111 1111 1111 1111")), ("exp", .string("12/30"))])),
                ("extraData", .object([("nested", .object([("a", .array([.int(1), .null, .bool(false)]))]))])),
                ("unicode key ✓", .string("\u{2028}\u{2029}")),
            ]),
        ]
        for v in samples {
            let text = JSONWriter.string(v)
            #expect(try JSONParser().parse(text) == v, "round trip of \(text)")
        }
    }

    @Test func randomStringsRoundTrip() throws {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        let pool: [Unicode.Scalar] =
            (0..<0x80).map { Unicode.Scalar(UInt8($0)) } + ["é", "€", "😀", "\u{2028}", "\u{FEFF}", "\u{10FFFF}"]
        for _ in 0..<500 {
            let n = Int.random(in: 0...40, using: &rng)
            let s = String(String.UnicodeScalarView((0..<n).map { _ in pool.randomElement(using: &rng)! }))
            #expect(try JSONParser().parse(JSONWriter.encode(.string(s))) == .string(s))
        }
    }
}
