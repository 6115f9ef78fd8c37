import Testing

@testable import CloakCore

/// Reference §6: the four mapping policies, field-name parsing and the two deep merges.
@Suite struct FieldNameMappingTests {
    static func json(_ text: String) -> JSONValue { try! JSONParser().parse(text) }
    static func body(_ fields: [(String, String)], extra: String = "{}", _ policy: MappingPolicy) -> String {
        JSONWriter.string(
            FieldNameMapper.body(
                fields.map { ($0.0, .string($0.1)) },
                extraData: json(extra).objectMembers ?? [], policy: policy))
    }

    @Test(arguments: [
        ("card", [FieldNameSubscript.key("card")]),
        ("card_data.number", [.key("card_data"), .key("number")]),
        ("a..b.", [.key("a"), .key("b")]),
        ("cards[2].number", [.key("cards"), .index(2), .key("number")]),
        ("cards[1][3]", [.key("cards"), .index(1)]),  // the second index is ignored
        ("cards[1]tail.x", [.key("cards"), .index(1), .key("x")]),  // text after ] is ignored
        ("[0].a", [.key(""), .index(0), .key("a")]),
        ("cards[x].y", [.key("cards"), .key("y")]),  // not a number: no index
    ])
    func fieldNamesParseAsTheSDKDoes(name: String, expected: [FieldNameSubscript]) {
        #expect(FieldNameSubscript.parse(name) == expected)
    }

    @Test func flatJSONKeepsNamesAsKeys() {
        #expect(Self.body([("card_data.number", "4")], .flatJSON) == #"{"card_data.number":"4"}"#)
    }

    @Test func nestedJSONSplitsOnDotsWithoutArrays() {
        #expect(
            Self.body([("card_data.number", "4"), ("card_data.cvc", "1"), ("x[0].y", "2")], .nestedJSON)
                == #"{"card_data":{"number":"4","cvc":"1"},"x[0]":{"y":"2"}}"#)
    }

    @Test(arguments: [MappingPolicy.nestedJSONWithArrayMerge, .nestedJSONWithArrayOverwrite])
    func indexesBuildArraysPaddedWithNull(policy: MappingPolicy) {
        #expect(Self.body([("cards[2].number", "4")], policy) == #"{"cards":[null,null,{"number":"4"}]}"#)
        #expect(Self.body([("list[1]", "b"), ("list[0]", "a")], policy) == #"{"list":["a","b"]}"#)
    }

    @Test(arguments: MappingPolicy.allCases)
    func fieldValuesWinOverExtraDataOnAConflict(policy: MappingPolicy) {
        let out = Self.json(Self.body([("a", "field")], extra: #"{"a":"extra","b":"kept"}"#, policy))
        #expect(out["a"] == .string("field"))
        #expect(out["b"] == .string("kept"))
    }

    @Test func nestedObjectsFromExtraDataMergeWithFields() {
        #expect(
            Self.body([("card.number", "4")], extra: #"{"card":{"brand":"visa"},"n":1}"#, .nestedJSON)
                == #"{"card":{"brand":"visa","number":"4"},"n":1}"#)
    }

    @Test func arrayMergeAppendsPrimitivesAndMergesObjectsByIndex() {
        let merged = Self.body(
            [("list[0]", "f"), ("objs[0].b", "2")],
            extra: #"{"list":["e"],"objs":[{"a":"1"}]}"#, .nestedJSONWithArrayMerge)
        #expect(merged == #"{"list":["e","f"],"objs":[{"a":"1","b":"2"}]}"#)
    }

    @Test func arrayOverwriteReplacesTheExtraDataArray() {
        let out = Self.body([("list[0]", "f")], extra: #"{"list":["e","g"]}"#, .nestedJSONWithArrayOverwrite)
        #expect(out == #"{"list":["f"]}"#)
    }

    @Test func aNullInTheTargetArrayIsAnElementThatAnObjectReplaces() {
        // Reference case 23: target [.., null] at index 4 takes {"cvv":"333"}; length stays 5.
        let target = Self.json(#"[1,2,3,4,null]"#)
        let source = Self.json(#"[null,null,null,null,{"cvv":"333"}]"#)
        let merged = JSONMerge.deepMerge(target: target, source: source, arrays: .merge)
        #expect(merged == Self.json(#"[1,2,3,4,{"cvv":"333"}]"#))
    }

    @Test func sourceNullsAreAppendedOnlyPastTheEnd() {
        let merged = JSONMerge.deepArrayMerge(target: [.string("a")], source: [.null, .null, .string("z")])
        #expect(merged == [.string("a"), .null, .string("z")])
    }

    @Test func nestedArraysMergeRecursivelyInsideObjects() {
        let merged = JSONMerge.deepMerge(
            target: Self.json(#"{"a":{"l":[{"x":1}]}}"#),
            source: Self.json(#"{"a":{"l":[{"y":2}]}}"#), arrays: .merge)
        #expect(merged == Self.json(#"{"a":{"l":[{"x":1,"y":2}]}}"#))
    }

    @Test(arguments: MappingPolicy.allCases)
    func serializerComponentsGoThroughTheSameMapping(policy: MappingPolicy) {
        let out = Self.json(Self.body([("card.exp_month", "12"), ("card.exp_year", "2030")], policy))
        if policy == .flatJSON {
            #expect(out["card.exp_month"] == .string("12"))
        } else {
            #expect(out["card"]?["exp_month"] == .string("12"))
            #expect(out["card"]?["exp_year"] == .string("2030"))
        }
    }
}

/// Found by the config fuzzer: a name with no part must never become the whole body.
@Suite struct FieldNameWithoutPartsTests {
    @Test(arguments: [MappingPolicy.nestedJSON, .nestedJSONWithArrayMerge, .nestedJSONWithArrayOverwrite])
    func aNameWithoutPartsNeverReplacesTheBody(policy: MappingPolicy) {
        let body = FieldNameMapper.body(
            [(name: "a", value: .string("1")), (name: ".", value: .string("secret"))],
            extraData: [("x", .string("kept"))], policy: policy)
        #expect(body["a"] == .string("1") && body["x"] == .string("kept"))
    }
}
