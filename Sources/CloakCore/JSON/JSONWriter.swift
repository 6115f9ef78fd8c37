/// Serialises ``JSONValue`` to compact UTF-8 JSON.
///
/// The bytes grow in storage the writer owns (copied on write, like an array), so appending a
/// piece is a capacity check and a copy: answers are written piece by piece, dozens per field.
public struct JSONWriter {
    /// Growable bytes; a writer copies them before writing when another writer shares them.
    /// The fields sit behind a pointer (a `let`), so writing them needs no exclusivity check.
    final class Storage {
        struct Fields {
            var start: UnsafeMutablePointer<UInt8>
            var count: Int
            var capacity: Int
        }

        let fields: UnsafeMutablePointer<Fields>

        init(capacity: Int) {
            let capacity = max(capacity, 16)
            fields = .allocate(capacity: 1)
            fields.initialize(to: Fields(start: .allocate(capacity: capacity), count: 0, capacity: capacity))
        }

        deinit {
            fields.pointee.start.deallocate()
            fields.deallocate()
        }

        func copy() -> Storage {
            let other = Storage(capacity: fields.pointee.capacity)
            other.fields.pointee.start.update(from: fields.pointee.start, count: fields.pointee.count)
            other.fields.pointee.count = fields.pointee.count
            return other
        }

        func grow(toHold extra: Int) {
            let f = fields.pointee
            let wanted = max(f.capacity * 2, f.count + extra)
            let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: wanted)
            bigger.update(from: f.start, count: f.count)
            f.start.deallocate()
            fields.pointee.start = bigger
            fields.pointee.capacity = wanted
        }
    }

    private var storage: Storage

    /// The JSON written so far.
    public var bytes: [UInt8] {
        Array(UnsafeBufferPointer(start: storage.fields.pointee.start, count: storage.fields.pointee.count))
    }

    public init(reservingCapacity capacity: Int = 256) {
        storage = Storage(capacity: capacity)
    }

    /// Room for `n` more bytes at the end; the caller writes them at the returned position.
    @inline(__always)
    private mutating func claim(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        let fields = storage.fields
        if fields.pointee.capacity - fields.pointee.count < n { storage.grow(toHold: n) }
        let at = fields.pointee.start + fields.pointee.count
        fields.pointee.count += n
        return at
    }

    @inline(__always)
    private mutating func byte(_ b: UInt8) { claim(1).pointee = b }

    @inline(__always)
    private mutating func raw(_ p: UnsafeBufferPointer<UInt8>) {
        guard let base = p.baseAddress, !p.isEmpty else { return }
        claim(p.count).update(from: base, count: p.count)
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
        case let .number(n): appendText(n)
        case let .string(s): writeString(s)
        case let .array(elements):
            byte(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { byte(UInt8(ascii: ",")) }
                write(e)
            }
            byte(UInt8(ascii: "]"))
        case let .object(members):
            byte(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { byte(UInt8(ascii: ",")) }
                writeString(m.key)
                byte(UInt8(ascii: ":"))
                write(m.value)
            }
            byte(UInt8(ascii: "}"))
        }
    }

    // MARK: Streaming
    //
    // For answers on the hot path: write members straight into the buffer instead of building a
    // ``JSONValue`` tree first. The caller keeps the nesting balanced.

    /// Writes `{`; members follow with ``key(_:)``, then ``endObject()``.
    public mutating func beginObject() {
        byte(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        byte(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Writes a member name (and the comma before it when needed); the value follows.
    public mutating func key(_ name: String) {
        if needsComma { byte(UInt8(ascii: ",")) }
        writeString(name)
        byte(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func member(_ name: String, _ value: Bool) {
        key(name)
        append(value ? "true" : "false")
        needsComma = true
    }

    public mutating func member(_ name: String, _ value: Int) {
        key(name)
        appendText(String(value))
        needsComma = true
    }

    public mutating func member(_ name: String, _ value: String) {
        key(name)
        writeString(value)
        needsComma = true
    }

    public mutating func member(_ name: String, _ values: [String]) {
        key(name)
        byte(UInt8(ascii: "["))
        for (i, v) in values.enumerated() {
            if i > 0 { byte(UInt8(ascii: ",")) }
            writeString(v)
        }
        byte(UInt8(ascii: "]"))
        needsComma = true
    }

    private var needsComma = false

    private mutating func append(_ s: StaticString) {
        raw(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private mutating func appendText(_ s: String) {
        var s = s
        s.withUTF8 { raw($0) }
    }

    public mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            var plain = true
            for b in utf8 where b < 0x20 || b == 0x22 || b == 0x5C {
                plain = false
                break
            }
            if plain {
                let at = claim(utf8.count + 2)
                at.pointee = UInt8(ascii: "\"")
                if let base = utf8.baseAddress { (at + 1).update(from: base, count: utf8.count) }
                at[utf8.count + 1] = UInt8(ascii: "\"")
                return
            }
            byte(UInt8(ascii: "\""))
            for b in utf8 {
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte(0x5C); byte(b)
                case 0x0A: byte(0x5C); byte(UInt8(ascii: "n"))
                case 0x0D: byte(0x5C); byte(UInt8(ascii: "r"))
                case 0x09: byte(0x5C); byte(UInt8(ascii: "t"))
                case 0..<0x20:
                    let hex: StaticString = "0123456789abcdef"
                    append("\\u00")
                    byte(hex.utf8Start[Int(b >> 4)])
                    byte(hex.utf8Start[Int(b & 0xF)])
                default: byte(b)
                }
            }
            byte(UInt8(ascii: "\""))
        }
    }
}
