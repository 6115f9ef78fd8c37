/// Serialises ``JSONValue`` to compact UTF-8 JSON.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case let .bool(b): append(b ? "true" : "false")
        case let .number(n): bytes.append(contentsOf: n.utf8)
        case let .string(s): writeString(s)
        case let .array(elements):
            bytes.append(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(e)
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(members):
            bytes.append(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(m.key)
                bytes.append(UInt8(ascii: ":"))
                write(m.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    // MARK: Streaming
    //
    // For answers on the hot path: write members straight into the buffer instead of building a
    // ``JSONValue`` tree first. The caller keeps the nesting balanced.

    /// Writes `{`; members follow with ``key(_:)``, then ``endObject()``.
    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Writes a member name (and the comma before it when needed); the value follows.
    public mutating func key(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func member(_ name: String, _ value: Bool) {
        key(name)
        append(value ? "true" : "false")
        needsComma = true
    }

    public mutating func member(_ name: String, _ value: Int) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    public mutating func member(_ name: String, _ value: String) {
        key(name)
        writeString(value)
        needsComma = true
    }

    public mutating func member(_ name: String, _ values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (i, v) in values.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            writeString(v)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    private var needsComma = false

    private mutating func append(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var copy = s
        let plain = copy.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if plain {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(b)
            case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(b)
            case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
            case 0..<0x20:
                append("\\u00")
                bytes.append(Self.hexDigits[Int(b >> 4)])
                bytes.append(Self.hexDigits[Int(b & 0xF)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
