/// The protocol buffers wire format, written by hand for the few messages Cloak sends (OTLP's
/// trace export): varints, fixed-width numbers, and length-delimited fields whose length is
/// put in front of their bytes once they are written. Fields at their default value are left
/// out, as proto3 does, unless `present` (a `oneof` member, whose presence is its meaning).
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Forgets what was written, keeping the buffer.
    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    private enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    private mutating func varint(_ value: UInt64) {
        if value < 0x80 {  // tags and short lengths: most varints written
            bytes.append(UInt8(value))
            return
        }
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// A `uint32`, `uint64`, enum or `bool` field; an `int64` as its two's complement.
    mutating func varint(_ field: Int, _ value: UInt64, present: Bool = false) {
        guard value != 0 || present else { return }
        tag(field, .varint)
        varint(value)
    }

    mutating func int64(_ field: Int, _ value: Int64, present: Bool = false) {
        varint(field, UInt64(bitPattern: value), present: present)
    }

    mutating func bool(_ field: Int, _ value: Bool, present: Bool = false) {
        varint(field, value ? 1 : 0, present: present)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func double(_ field: Int, _ value: Double, present: Bool = false) {
        guard value.bitPattern != 0 || present else { return }
        tag(field, .fixed64)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ field: Int, _ value: String, present: Bool = false) {
        guard !value.isEmpty || present else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        // One copy of the string's bytes (its UTF-8 in place, or on the stack for a small one).
        var value = value
        value.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A `bytes` field of a 64-bit number's big-endian bytes (a span id).
    mutating func bigEndian(_ field: Int, _ value: UInt64) {
        tag(field, .lengthDelimited)
        varint(8)
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `bytes` field of two 64-bit numbers' big-endian bytes (a trace id).
    mutating func bigEndian(_ field: Int, _ high: UInt64, _ low: UInt64) {
        tag(field, .lengthDelimited)
        varint(16)
        withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { bytes.append(contentsOf: $0) }
    }

    /// An `AnyValue`'s one scalar member (present even when zero: a `oneof` member).
    enum Scalar {
        case string(Int, String)
        case varint(Int, UInt64)
        case fixed64(Int, UInt64)
    }

    /// A `KeyValue {key = 1; AnyValue value = 2}` as field `field`, its lengths counted first.
    mutating func keyValue(_ field: Int, _ key: String, _ value: Scalar) {
        let keyBytes = key.utf8.count
        let valueLength: Int
        switch value {
        case .string(let member, let text):
            let count = text.utf8.count
            valueLength = Self.size(UInt64(member) << 3) + Self.size(UInt64(count)) + count
        case .varint(let member, let number):
            valueLength = Self.size(UInt64(member) << 3) + Self.size(number)
        case .fixed64(let member, _):
            valueLength = Self.size(UInt64(member) << 3) + 8
        }
        let keyValueLength =
            (keyBytes > 0 ? 1 + Self.size(UInt64(keyBytes)) + keyBytes : 0) + 1
            + Self.size(UInt64(valueLength)) + valueLength
        tag(field, .lengthDelimited)
        varint(UInt64(keyValueLength))
        string(1, key)
        tag(2, .lengthDelimited)
        varint(UInt64(valueLength))
        switch value {
        case .string(let member, let text): string(member, text, present: true)
        case .varint(let member, let number): varint(member, number, present: true)
        case .fixed64(let member, let bits):
            tag(member, .fixed64)
            withUnsafeBytes(of: bits.littleEndian) { bytes.append(contentsOf: $0) }
        }
    }

    /// A length-delimited field's tag and length, its `length` bytes to follow.
    mutating func header(_ field: Int, length: Int) {
        tag(field, .lengthDelimited)
        varint(UInt64(length))
    }

    /// A length-delimited field holding `content` (a message's bytes, written before).
    mutating func field(_ field: Int, _ content: [UInt8]) {
        header(field, length: content.count)
        bytes.append(contentsOf: content)
    }

    /// Bytes already in the wire format (fields written by another writer).
    mutating func raw(_ content: [UInt8]) { bytes.append(contentsOf: content) }

    /// The bytes a length-delimited field `field` of `length` bytes takes, tag and length included.
    static func fieldSize(_ field: Int, length: Int) -> Int {
        size(UInt64(field) << 3) + size(UInt64(length)) + length
    }

    /// The bytes `value` takes as a varint.
    static func size(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// A nested message, written by `body` (an empty one too: a repeated element or a message
    /// field is present whatever it holds).
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, .lengthDelimited)
        let start = bytes.count
        body(&self)
        let length = bytes.count - start
        var prefix = ProtobufWriter()
        prefix.varint(UInt64(length))
        bytes.insert(contentsOf: prefix.bytes, at: start)
    }
}
