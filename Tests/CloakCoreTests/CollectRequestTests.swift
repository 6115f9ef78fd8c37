import Testing

@testable import CloakCore

/// Submissions: `{"fields": {...}, "extraData": {...}, "options": {...}}`, refused with 1002.
@Suite struct CollectRequestTests {
    static let form = FormSchema(
        name: "checkout",
        fields: [
            field("card", .cardNumber), field("cvc", .cvc), field("exp", .expDate),
        ])

    static let card = "4111111111111111"

    static func request(_ json: String) throws -> CollectRequest {
        try CollectRequest(try JSONParser().parse(json), form: form)
    }

    static func error(_ json: String) -> CloakError? {
        let body: JSONValue
        do { body = try JSONParser().parse(json) } catch {
            Issue.record("fixture is not JSON: \(error)")
            return nil
        }
        do {
            _ = try CollectRequest(body, form: form)
            return nil
        } catch {
            return error
        }
    }

    @Test func readsFieldsExtraDataAndOptions() throws {
        let r = try Self.request(
            #"{"fields": {"card": "4111 1111 1111 1111", "exp": "12/30"}, "extraData": {"order": {"id": 7}}, "options": {"fieldNameMappingPolicy": "flatJSON"}}"#
        )
        #expect(r.values == ["4111 1111 1111 1111", nil, "12/30"])
        #expect(r.extraData.map(\.key) == ["order"])
        #expect(r.extraData.first?.value == .object([("id", .number("7"))]))
        #expect(r.mappingPolicy == .flatJSON)
    }

    @Test func fieldsMayBeEmptyAndOptionsAbsent() throws {
        let r = try Self.request(#"{"fields": {}}"#)
        #expect(r.values == [nil, nil, nil])
        #expect(r.extraData.isEmpty)
        #expect(r.mappingPolicy == nil)
    }

    @Test(arguments: ["flatJSON", "nestedJSON", "nestedJSONWithArrayMerge", "nestedJSONWithArrayOverwrite"])
    func acceptsEveryMappingPolicy(name: String) throws {
        let r = try Self.request(#"{"fields": {}, "options": {"fieldNameMappingPolicy": "\#(name)"}}"#)
        #expect(r.mappingPolicy?.rawValue == name)
    }

    @Test(arguments: [
        // not an object
        #"[]"#, #""4111111111111111""#, "4111111111111111", "null", "true",
        // no fields
        "{}", #"{"extraData": {}}"#, #"{"options": {}}"#,
        // fields not an object
        #"{"fields": []}"#, #"{"fields": "4111111111111111"}"#, #"{"fields": null}"#, #"{"fields": 4111111111111111}"#,
        // values that are not strings
        #"{"fields": {"card": 4111111111111111}}"#, #"{"fields": {"card": null}}"#, #"{"fields": {"card": true}}"#,
        #"{"fields": {"card": ["4111111111111111"]}}"#, #"{"fields": {"card": {"n": "4111111111111111"}}}"#,
        // unknown and duplicate field names
        #"{"fields": {"pan": "4111111111111111"}}"#, #"{"fields": {"Card": "4111111111111111"}}"#,
        #"{"fields": {"4111111111111111": "x"}}"#,
        // bad options and members
        #"{"fields": {}, "options": {"fieldNameMappingPolicy": "4111111111111111"}}"#,
        #"{"fields": {}, "options": {"fieldNameMappingPolicy": "FLATJSON"}}"#,
        #"{"fields": {}, "options": {"fieldNameMappingPolicy": 1}}"#,
        #"{"fields": {}, "options": {"fieldNameMappingPolicy": null}}"#,
        #"{"fields": {}, "options": {"4111111111111111": "flatJSON"}}"#,
        #"{"fields": {}, "options": []}"#, #"{"fields": {}, "options": "flatJSON"}"#,
        #"{"fields": {}, "extraData": []}"#, #"{"fields": {}, "extraData": "4111111111111111"}"#,
        #"{"fields": {}, "4111111111111111": {}}"#, #"{"fields": {}, "data": {}}"#,
    ])
    func malformedSubmissionsFailWith1002AndNeverQuoteValues(json: String) throws {
        let error = try #require(Self.error(json))
        #expect(error.code == .malformedRequest)
        #expect(error.code.rawValue == 1002)
        let texts = [error.description, error.message, JSONWriter.string(error.body)]
        for text in texts {
            #expect(!text.contains(Self.card), "\(text)")
            #expect(!text.contains("5555555555554444"), "\(text)")
        }
    }

    @Test func errorMessagesNameTheProblem() throws {
        #expect(try #require(Self.error(#"{"fields": {"card": 4111111111111111}}"#)).message.contains("card"))
        #expect(try #require(Self.error(#"{"fields": {"pan": "x"}}"#)).message.contains("pan"))
        #expect(
            try #require(Self.error(#"{"fields": {}, "options": {"fieldNameMappingPolicy": "x"}}"#))
                .message.contains("fieldNameMappingPolicy"))
    }

    @Test func aCardNumberUsedAsAFieldNameIsRedacted() throws {
        let error = try #require(Self.error(#"{"fields": {"4111 1111 1111 1111": "x"}}"#))
        #expect(!error.message.contains("4111 1111 1111 1111"))
        #expect(error.message.contains("[redacted]"))
    }
}

/// Defect 15: a parsed submission and its field results print without their values.
@Suite struct CollectRequestRedactionTests {
    @Test func collectRequestsAndFieldResultsPrintRedacted() throws {
        let request = try CollectRequestTests.request(
            #"{"fields":{"card":"4111111111111111"},"extraData":{"x":"123456789"}}"#)
        var dumped = ""
        dump(request, to: &dumped)
        for text in ["\(request)", String(reflecting: request), dumped] {
            #expect(!text.contains("4111111111111111") && !text.contains("123456789"), "\(text)")
        }
    }
}

/// The byte reader of submissions (``CollectRequest/reading(_:form:)``) must never disagree
/// with the general path: whatever it accepts, the parser and ``CollectRequest/init(_:form:)``
/// accept as the same request; whatever else, it leaves to them.
@Suite struct CollectRequestByteReaderTests {
    static let form = FormSchema(
        name: "checkout",
        fields: [
            field("card", .cardNumber), field("cvc", .cvc), field("exp", .expDate), field("K", .none),
        ])

    static let bodies: [String] = [
        #"{"fields": {"card": "4111 1111 1111 1111", "exp": "12/30"}}"#,
        #"{"fields":{"card":"4111","cvc":"123","exp":"12/30","K":"x"},"extraData":{"order":{"id":7}},"options":{"fieldNameMappingPolicy":"flatJSON"}}"#,
        " \n{ \"fields\" : { } , \"extraData\" : { } }\t",
        #"{"fields":{"K":"x","exp":"12/30","cvc":"123","card":"4111"}}"#,
        #"{"fields":{"cvc":"1","card":"2","cvc":"3"}}"#,
        #"{"fields": {}}"#, #"{}"#, "", " ", "[]", "null", #""fields""#,
        #"{"fields": {"card": "1"}, "fields": {"cvc": "2"}}"#,
        #"{"fields": {"card": "1", "card": "2"}}"#,
        #"{"fields": {"ca\u0072d": "1"}}"#,
        #"{"fields": {"card": "a\"b\\c\u00e9"}}"#,
        #"{"fields": {"card": 4111}}"#, #"{"fields": {"card": null}}"#, #"{"fields": {"card": ["1"]}}"#,
        #"{"fields": {"nope": "1"}}"#, #"{"fields": {"\u212a": "1"}}"#, "{\"fields\": {\"\u{212A}\": \"1\"}}",
        #"{"fields": []}"#, #"{"fields": "x"}"#, #"{"extraData": {}}"#,
        #"{"fields": {}, "extraData": []}"#, #"{"fields": {}, "extraData": {"a": 1, "a": 2}}"#,
        #"{"fields": {}, "extraData": {}, "extraData": {}}"#,
        #"{"fields": {}, "options": {}}"#, #"{"fields": {}, "options": {"fieldNameMappingPolicy": "bad"}}"#,
        #"{"fields": {}, "options": {"other": 1}}"#, #"{"fields": {}, "options": []}"#,
        #"{"fields": {}, "unknown": 1}"#, #"{"fields": {}} x"#, #"{"fields": {}},"#, #"{"fields": {},}"#,
        #"{"fields": {"card": "1",}}"#, #"{"fields": {"card" "1"}}"#, #"{"fields": {"card": "1"}"#,
        "{\"fields\": {\"card\": \"a\u{1}b\"}}", "{\"fields\": {\"card\": \"é\"}}",
        "{\"fields\": {\"card\": \"\u{FF}\"}}",
    ]

    static func general(_ body: [UInt8]) -> CollectRequest? {
        guard let document = try? JSONParser().parse(body) else { return nil }
        return try? CollectRequest(document, form: form)
    }

    static func same(_ a: CollectRequest, _ b: CollectRequest) -> Bool {
        a.values == b.values && a.mappingPolicy == b.mappingPolicy && a.extraData.count == b.extraData.count
            && zip(a.extraData, b.extraData).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    static func check(_ body: [UInt8]) {
        guard let fast = CollectRequest.reading(body, form: form) else { return }
        guard let slow = general(body) else {
            Issue.record("the byte reader accepted what the general path refuses: \(body)")
            return
        }
        #expect(same(fast, slow), "\(body)")
    }

    @Test(arguments: bodies)
    func agreesWithTheGeneralPath(body: String) {
        Self.check(Array(body.utf8))
    }

    /// Including fields in another order than the form's (each name is tried against the
    /// form's field at its position first).
    @Test func readsTheUsualShapeItself() throws {
        for body in Self.bodies.prefix(4) {
            let fast = try #require(CollectRequest.reading(Array(body.utf8), form: Self.form))
            #expect(Self.same(fast, try #require(Self.general(Array(body.utf8)))))
        }
        let reversed = try #require(CollectRequest.reading(Array(Self.bodies[3].utf8), form: Self.form))
        #expect(reversed.values == ["4111", "123", "12/30", "x"])
    }

    /// Random edits of accepted bodies: still never a disagreement.
    @Test func agreesOnMutatedBodies() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,\ "card""fields"x1é"#.utf8) + [0x00, 0xFF, 0x0A]
        for _ in 0..<3_000 {
            var body = Array(Self.bodies[Int.random(in: 0..<3, using: &generator)].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0...body.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: body.insert(alphabet.randomElement(using: &generator)!, at: at)
                case 1: if at < body.count { body.remove(at: at) }
                default: if at < body.count { body[at] = alphabet.randomElement(using: &generator)! }
                }
            }
            Self.check(body)
        }
    }
}
