import Testing

@testable import CloakCore

/// The selector engine of issue 8 (pure): JSONPath subset, form keys, content types.
@Suite struct JSONPathTests {
    @Test(arguments: [
        ("$.a.b", [JSONPath.Step.member("a"), .member("b")]),
        ("$['a.b']", [.member("a.b")]),
        (#"$["it's"]"#, [.member("it's")]),
        (#"$['a\'b']"#, [.member("a'b")]),
        ("$.a[0]", [.member("a"), .index(0)]),
        ("$.a[*]", [.member("a"), .wildcard]),
        ("$.*", [.wildcard]),
        ("$..name", [.descendant("name")]),
        ("$.a..pan[2]", [.member("a"), .descendant("pan"), .index(2)]),
        ("$['card[number]']", [.member("card[number]")]),
    ])
    func parses(text: String, steps: [JSONPath.Step]) throws {
        #expect(try JSONPath(text).steps == steps)
    }

    @Test(arguments: [
        "", "a.b", "$", "$.", "$..", "$..*", "$[", "$[x]", "$[-1]", "$[1234567890]", "$.a[", "$a", "$['a'",
    ])
    func refusesWithAClearError(text: String) {
        #expect(throws: SelectorError.self) { try JSONPath(text) }
    }

    static let document = try! JSONParser().parse(
        #"""
        {"payment":{"card_number":"4111111111111111","cvc":123},
         "items":[{"pan":"5555555555554444"},{"x":{"pan":"4000056655665556"}}],
         "a.b":"dotted","pan":"top"}
        """#)

    @Test func selectsInDocumentOrder() throws {
        func texts(_ path: String) throws -> [JSONValue?] {
            try JSONPath(path).locations(in: Self.document).map { Self.document.value(at: $0) }
        }
        #expect(try texts("$.payment.card_number") == [.string("4111111111111111")])
        #expect(try texts("$['a.b']") == [.string("dotted")])
        #expect(try texts("$.items[1].x.pan") == [.string("4000056655665556")])
        #expect(try texts("$.items[*].pan") == [.string("5555555555554444")])
        #expect(try texts("$..pan") == [.string("5555555555554444"), .string("4000056655665556"), .string("top")])
        #expect(try texts("$.items[9]").isEmpty)
        #expect(try texts("$.missing.deeper").isEmpty)
    }
}

@Suite struct JSONSelectionTests {
    static let body = Array(#"{"payment":{"card_number":"4111111111111111","cvc":123,"amount":10},"note":"x"}"#.utf8)

    @Test func redactThenRevealGivesTheOriginalBack() throws {
        let paths = [try JSONPath("$.payment.card_number"), try JSONPath("$..cvc")]
        let selection = try #require(try JSONSelection.select(paths, in: Self.body))
        #expect(selection.matches.map(\.text.value) == ["4111111111111111", "123"])
        let redacted = selection.rewrite(["4111119876541111", "tok_sandbox_abc"])
        #expect(
            String(decoding: redacted, as: UTF8.self)
                == #"{"payment":{"card_number":"4111119876541111","cvc":"tok_sandbox_abc","amount":10},"note":"x"}"#)
        let again = try #require(try JSONSelection.select(paths, in: redacted))
        let revealed = again.rewrite(
            again.matches.map { $0.text.value == "4111119876541111" ? "4111111111111111" : "123" })
        // A number aliased in a non-numeric format comes back as the same digits in a string;
        // one aliased in a numeric format stays a number (numbersStayNumbersWhenTheirReplacementIsOne).
        #expect(
            String(decoding: revealed, as: UTF8.self)
                == #"{"payment":{"card_number":"4111111111111111","cvc":"123","amount":10},"note":"x"}"#)
    }

    @Test func aBodyWithNothingSelectedIsNotASelection() throws {
        #expect(try JSONSelection.select([try JSONPath("$.nothing")], in: Self.body) == nil)
    }

    @Test func numbersStayNumbersWhenTheirReplacementIsOne() throws {
        let selection = try #require(
            try JSONSelection.select([try JSONPath("$.n")], in: Array(#"{"n":4111111111111111}"#.utf8)))
        #expect(String(decoding: selection.rewrite(["4111119876541111"]), as: UTF8.self) == #"{"n":4111119876541111}"#)
        #expect(String(decoding: selection.rewrite(["tok_x"]), as: UTF8.self) == #"{"n":"tok_x"}"#)
    }

    @Test(arguments: [
        #"{"p":{"card":{"n":1}}}"#, #"{"p":{"card":[1]}}"#, #"{"p":{"card":null}}"#, #"{"p":{"card":true}}"#,
    ])
    func objectsArraysNullsAndBooleansAreRefusedByPath(json: String) throws {
        let error = try #require(throws: CloakError.self) {
            try JSONSelection.select([try JSONPath("$.p.card")], in: Array(json.utf8))
        }
        #expect(error.code == .malformedRequest && error.message.contains("$.p.card"))
    }

    @Test func aBodyThatDoesNotParseIs1002WithoutQuotingIt() throws {
        let error = try #require(throws: CloakError.self) {
            try JSONSelection.select([try JSONPath("$.a")], in: Array(#"{"a":"4111111111111111""#.utf8))
        }
        #expect(error.code == .malformedRequest && !error.message.contains("4111"))
    }

    @Test func twoPathsToOneValueSelectItOnce() throws {
        let selection = try #require(
            try JSONSelection.select([try JSONPath("$.a"), try JSONPath("$..a")], in: Array(#"{"a":"v"}"#.utf8)))
        #expect(selection.matches.count == 1)
    }
}

@Suite struct FormSelectionTests {
    static let body = Array("amount=100&card%5Bnumber%5D=4111+1111+1111+1111&card[cvc]=123&currency=usd&flag".utf8)

    @Test func selectedValuesAreReplacedAndEveryOtherByteKept() throws {
        let selection = try #require(try FormSelection.select(["card[number]", "card[cvc]"], in: Self.body))
        #expect(selection.matches.map(\.text.value) == ["4111 1111 1111 1111", "123"])
        let out = String(decoding: selection.rewrite(["tok a&b=c", "tok_2"]), as: UTF8.self)
        #expect(out == "amount=100&card%5Bnumber%5D=tok+a%26b%3Dc&card[cvc]=tok_2&currency=usd&flag")
        let again = try #require(try FormSelection.select(["card[number]"], in: Array(out.utf8)))
        #expect(again.matches.map(\.text.value) == ["tok a&b=c"])
    }

    @Test func aFormWithoutTheKeysIsNotASelection() throws {
        #expect(try FormSelection.select(["card[number]"], in: Array("a=1&b=2".utf8)) == nil)
    }

    @Test(arguments: ["card[number]=%zz", "card%5=1", "card[number]=%C3%28"])
    func badEncodingIs1002(body: String) {
        #expect(throws: CloakError.self) { try FormSelection.select(["card[number]"], in: Array(body.utf8)) }
    }

    @Test(
        arguments: [
            ("application/json", SelectableBody.json), ("Application/JSON; charset=utf-8", .json),
            ("application/vnd.api+json", .json), ("application/x-www-form-urlencoded", .form),
            ("application/x-www-form-urlencoded;charset=UTF-8", .form), ("text/plain", .other), (nil, .other),
            ("application/jsonx", .other),
        ] as [(String?, SelectableBody)])
    func contentTypesDecideWhichSelectorsApply(contentType: String?, kind: SelectableBody) {
        #expect(SelectableBody(contentType: contentType) == kind)
    }
}
