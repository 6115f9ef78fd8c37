import Testing

@testable import CloakCore

/// Submissions: `{"fields": {...}, "extraData": {...}, "options": {...}}`, refused with 1002.
@Suite struct CollectRequestTests {
    static let form = FormSchema(name: "checkout", fields: [
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
        #expect(try #require(Self.error(#"{"fields": {}, "options": {"fieldNameMappingPolicy": "x"}}"#))
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
        let request = try CollectRequestTests.request(#"{"fields":{"card":"4111111111111111"},"extraData":{"x":"123456789"}}"#)
        var dumped = ""
        dump(request, to: &dumped)
        for text in ["\(request)", String(reflecting: request), dumped] {
            #expect(!text.contains("4111111111111111") && !text.contains("123456789"), "\(text)")
        }
    }
}
