import CloakCore
import Testing

@Suite struct JSONWriterStreamingTests {
    @Test(arguments: [0, 7, 10, 99, 12345, -1, -987, Int.max, Int.min])
    func integersAreWrittenAsSwiftPrintsThem(_ value: Int) {
        var writer = JSONWriter()
        writer.writeInt(value)
        #expect(writer.string == String(value))
    }

    @Test func streamedMembersMakeOneValidObject() throws {
        var writer = JSONWriter(reservingCapacity: 16)  // grows as it goes
        writer.beginObject()
        writer.member("flag", true)
        writer.member("count", -42)
        writer.key("dynamic \"name\"")
        writer.beginObject()
        writer.member("list", ["a", "b\"c"])
        writer.endObject()
        writer.member("text", "line\nbreak")
        writer.endObject()
        #expect(
            writer.string == #"{"flag":true,"count":-42,"dynamic \"name\"":{"list":["a","b\"c"]},"text":"line\nbreak"}"#
        )
        #expect(
            try JSONParser().parse(writer.bytes)
                == .object([
                    ("flag", .bool(true)), ("count", .number("-42")),
                    ("dynamic \"name\"", .object([("list", .array([.string("a"), .string("b\"c")]))])),
                    ("text", .string("line\nbreak")),
                ]))
    }

    @Test(arguments: ["4111", "", "quote\"d", "back\\slash", "tab\there", "é"])
    func byteValuesAreEscapedLikeStrings(_ text: String) {
        var bytes = JSONWriter()
        bytes.beginObject()
        Array(text.utf8).withUnsafeBufferPointer { bytes.member("v", utf8: $0) }
        bytes.endObject()
        var string = JSONWriter()
        string.beginObject()
        string.member("v", text)
        string.endObject()
        #expect(bytes.string == string.string)
    }

    /// Past the capacity reserved, across several growths: the bytes are what was written, and
    /// every way of reading them agrees; taking them leaves the writer empty and usable.
    @Test(arguments: [16, 17, 100])
    func growsAndHandsItsBytesOver(capacity: Int) throws {
        var writer = JSONWriter(reservingCapacity: capacity)
        let values = (0..<200).map { "value-\($0)-" + String(repeating: "x", count: $0 % 7) }
        writer.beginArray()
        for v in values {
            writer.nextElement()
            writer.beginObject()
            writer.member("v", v)
            writer.endObject()
        }
        writer.endArray()
        let document = JSONValue.array(values.map { .object([("v", .string($0))]) })
        let expected = JSONWriter.encode(document)
        #expect(writer.bytes == expected)
        #expect(writer.withBytes { Array($0) } == expected)
        #expect(Array(writer.string.utf8) == expected)
        #expect(try JSONParser().parse(writer.bytes) == document)
        #expect(writer.takeBytes() == expected)
        #expect(writer.bytes.isEmpty)
        writer.rawJSON("[1]")
        #expect(writer.takeBytes() == Array("[1]".utf8))
        // Nothing written into a taken writer, then a piece of no bytes: still a valid place.
        writer.rawJSON(count: 0) { _ in }
        #expect(writer.takeBytes().isEmpty)
    }
}
