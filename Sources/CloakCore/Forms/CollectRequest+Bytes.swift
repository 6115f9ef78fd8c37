extension CollectRequest {
    /// Reads a submission straight from its JSON bytes, without building the document first,
    /// when it has the usual shape: an object of `fields` (field names of ASCII without escapes,
    /// each once, string values), `extraData` and `options`, each once.
    ///
    /// Returns nil for anything else (invalid JSON, an unknown or repeated member, a name with
    /// escapes or beyond ASCII, a value that is not a string, options that are refused): the
    /// caller then reads the body with ``JSONParser`` and ``init(_:form:)``, which give the same
    /// request or the error to answer. Whatever this accepts, that path accepts the same way.
    public static func reading(_ body: [UInt8], form: FormSchema) -> CollectRequest? {
        body.withUnsafeBufferPointer { bytes in
            var reader = JSONReader(bytes: bytes, maxDepth: JSONParser().maxDepth)
            return try? read(&reader, form)
        }
    }

    private static func read(_ r: inout JSONReader, _ form: FormSchema) throws(JSONParseError) -> CollectRequest? {
        guard r.isValidUTF8 else { return nil }
        var values: [String?]?
        var extraData: [(key: String, value: JSONValue)]?
        var options: JSONValue?
        r.skipWhitespace()
        guard r.at("{") else { return nil }
        r.index += 1
        repeat {
            r.skipWhitespace()
            guard r.at("\""), let key = try r.plainString(), r.skipColon() else { return nil }
            if key.elementsEqual("fields".utf8) {
                guard values == nil, let fields = try readFields(&r, form) else { return nil }
                values = fields
            } else if key.elementsEqual("extraData".utf8) {
                guard extraData == nil, r.at("{"), case let .object(members) = try r.value(depth: 1) else { return nil }
                extraData = members
            } else if key.elementsEqual("options".utf8) {
                guard options == nil else { return nil }
                options = try r.value(depth: 1)
            } else {
                return nil
            }
            r.skipWhitespace()
        } while r.skip(",")
        guard r.skip("}") else { return nil }
        r.skipWhitespace()
        guard r.index == r.bytes.count, let values else { return nil }
        var policy: MappingPolicy?
        if let options {
            guard let p = try? mappingPolicy(options: options) else { return nil }
            policy = p
        }
        return CollectRequest(values: values, extraData: extraData ?? [], mappingPolicy: policy)
    }

    /// The `fields` object at the cursor as values by field index; nil when it is not one the
    /// form's names and string values make.
    private static func readFields(_ r: inout JSONReader, _ form: FormSchema) throws(JSONParseError) -> [String?]? {
        guard r.skip("{") else { return nil }
        var values = [String?](repeating: nil, count: form.fields.count)
        r.skipWhitespace()
        if r.skip("}") { return values }
        var read = 0
        repeat {
            r.skipWhitespace()
            guard r.at("\""), let name = try r.plainString(), let i = form.index(ofASCII: name, expected: read),
                values[i] == nil, r.skipColon(), r.at("\"")
            else { return nil }
            values[i] = try r.string()
            read += 1
            r.skipWhitespace()
        } while r.skip(",")
        return r.skip("}") ? values : nil
    }
}

extension JSONReader {
    /// Whether the byte at the cursor is `c`.
    func at(_ c: Unicode.Scalar) -> Bool { index < bytes.count && bytes[index] == UInt8(ascii: c) }

    /// Moves past `c` when it is at the cursor.
    mutating func skip(_ c: Unicode.Scalar) -> Bool {
        guard at(c) else { return false }
        index += 1
        return true
    }

    /// Moves past white space, a colon and white space; false when there is no colon.
    mutating func skipColon() -> Bool {
        skipWhitespace()
        guard skip(":") else { return false }
        skipWhitespace()
        return true
    }
}
