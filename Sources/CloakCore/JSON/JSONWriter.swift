/// Serialises ``JSONValue`` to compact UTF-8 JSON.
///
/// The bytes grow in an array the writer owns, kept as long as its capacity (zeroed ahead of
/// the writes) with the count written beside it, so appending a piece is a capacity check and a
/// copy: answers are written piece by piece, dozens per field. ``takeBytes()`` hands the array
/// over without copying it (cut to the count written), which is how an answer leaves.
public struct JSONWriter {
    /// `used` bytes written, then zeros up to the array's count (the room left).
    private var buffer: [UInt8]
    private var used = 0

    /// The JSON written so far (a copy; see ``takeBytes()``).
    public var bytes: [UInt8] { Array(buffer[..<used]) }

    /// The JSON written, without copying it; the writer is left empty.
    public mutating func takeBytes() -> [UInt8] {
        buffer.removeSubrange(used...)  // the array's own storage, shortened in place
        used = 0
        let out = buffer
        buffer = []
        return out
    }

    /// Calls `body` with the bytes written so far, without copying them (valid only in the call).
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try buffer.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[..<used])) }
    }

    /// The JSON written so far, as a string.
    public var string: String { String(decoding: buffer[..<used], as: UTF8.self) }

    public init(reservingCapacity capacity: Int = 256) {
        buffer = [UInt8](repeating: 0, count: max(capacity, 16))
    }

    /// Room for `n` more bytes at the end; the caller writes them at once at the returned position
    /// (valid until the next write: the array neither moves nor is shared meanwhile).
    @inline(__always)
    private mutating func claim(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        // An empty array (after takeBytes) has no address to hand out, even for no bytes.
        if buffer.count - used < n || buffer.isEmpty { grow(max(n, 1)) }
        let at = buffer.withUnsafeMutableBufferPointer { $0.baseAddress! + used }
        used += n
        return at
    }

    /// At least twice the room, and `n` bytes more than written.
    @inline(never)
    private mutating func grow(_ n: Int) {
        buffer.append(contentsOf: repeatElement(0, count: max(buffer.count, used + n - buffer.count)))
    }

    @inline(__always)
    private mutating func byte(_ b: UInt8) { claim(1).pointee = b }

    @inline(__always)
    private mutating func raw(_ p: UnsafeBufferPointer<UInt8>) {
        guard let base = p.baseAddress, !p.isEmpty else { return }
        claim(p.count).update(from: base, count: p.count)
    }

    // MARK: Raw pieces
    //
    // For lines whose shape is fixed (the access log): the caller guarantees the pieces are valid
    // JSON where they stand.

    /// Appends `text` as it is: punctuation and member names that need no escaping.
    public mutating func rawJSON(_ text: StaticString) {
        raw(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `,"name":` as it is, in one piece: `name` is a member name that needs no escaping.
    public mutating func rawMemberName(_ name: StaticString) {
        let n = name.utf8CodeUnitCount
        let at = claim(n + 4)
        at[0] = UInt8(ascii: ",")
        at[1] = UInt8(ascii: "\"")
        (at + 2).update(from: name.utf8Start, count: n)
        at[n + 2] = UInt8(ascii: "\"")
        at[n + 3] = UInt8(ascii: ":")
    }

    /// Appends the `count` bytes `write` puts at the pointer it is given, as they are (a
    /// timestamp built in place).
    public mutating func rawJSON(count: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Void) {
        write(claim(count))
    }

    /// Appends an integer, its digits written in place.
    public mutating func writeInt(_ value: Int) {
        var magnitude = value.magnitude
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 { digits += 1; rest /= 10 }
        let sign = value < 0 ? 1 : 0
        let at = claim(digits + sign)
        if sign == 1 { at.pointee = UInt8(ascii: "-") }
        var i = digits + sign
        repeat {
            i -= 1
            at[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
    }

    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.takeBytes()
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: rawJSON("null")
        case let .bool(b): rawJSON(b ? "true" : "false")
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

    /// A member name known when compiling, which the caller guarantees needs no escaping: written
    /// with its quotes, colon and comma in one copy (the validate answer has dozens per request).
    public mutating func key(_ name: StaticString) {
        let count = name.utf8CodeUnitCount
        let comma = needsComma ? 1 : 0
        let at = claim(count + 3 + comma)
        if comma == 1 { at.pointee = UInt8(ascii: ",") }
        at[comma] = UInt8(ascii: "\"")
        (at + comma + 1).update(from: name.utf8Start, count: count)
        at[comma + count + 1] = UInt8(ascii: "\"")
        at[comma + count + 2] = UInt8(ascii: ":")
        needsComma = false
    }

    /// Writes `[`; each element follows ``nextElement()``, then ``endArray()``.
    public mutating func beginArray() {
        byte(UInt8(ascii: "["))
        needsComma = false
    }

    /// A string as a value (after ``key(_:)``, or an array element); the next member or element
    /// gets its comma.
    public mutating func stringValue(_ s: String) {
        writeString(s)
        needsComma = true
    }

    /// `null` as a value (an array element, or after ``key(_:)``); the next member or element
    /// gets its comma.
    public mutating func writeNull() {
        rawJSON("null")
        needsComma = true
    }

    /// Before each element of an array: the comma when one is needed.
    public mutating func nextElement() {
        if needsComma { byte(UInt8(ascii: ",")) }
        needsComma = false
    }

    public mutating func endArray() {
        byte(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Pre-encoded JSON that begins with a member name and ends after a complete value: a comma
    /// is written before it when one is needed, and the next member gets one. (The validate
    /// answer's `"field":{"isRequired":…,"isRequiredValidOnly":…` is fixed per field.)
    public mutating func rawMember(_ bytes: [UInt8]) {
        if needsComma { byte(UInt8(ascii: ",")) }
        bytes.withUnsafeBufferPointer { raw($0) }
        needsComma = true
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        rawJSON(value ? "true" : "false")
        needsComma = true
    }

    public mutating func member(_ name: StaticString, _ value: Int) {
        key(name)
        writeInt(value)
        needsComma = true
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        writeString(value)
        needsComma = true
    }

    /// A string value given as UTF-8 bytes (a slice of a value, without making a string of it):
    /// the caller guarantees the bytes are valid UTF-8 (cut at character boundaries).
    public mutating func member(_ name: StaticString, utf8 value: UnsafeBufferPointer<UInt8>) {
        key(name)
        writeQuoted(value)
        needsComma = true
    }

    public mutating func member(_ name: StaticString, _ values: [String]) {
        key(name)
        beginArray()
        for v in values {
            nextElement()
            writeString(v)
            needsComma = true
        }
        endArray()
    }

    private var needsComma = false

    private mutating func appendText(_ s: String) {
        var s = s
        s.withUTF8 { raw($0) }
    }

    public mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { writeQuoted($0) }
    }

    /// UTF-8 text as a JSON string: copied whole when nothing needs escaping (the usual case),
    /// else byte by byte with `"`, `\` and control bytes escaped.
    private mutating func writeQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
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
                rawJSON("\\u00")
                byte(hex.utf8Start[Int(b >> 4)])
                byte(hex.utf8Start[Int(b & 0xF)])
            default: byte(b)
            }
        }
        byte(UInt8(ascii: "\""))
    }
}
