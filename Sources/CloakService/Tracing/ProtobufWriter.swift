/// The protocol buffers wire format, written by hand for the few messages Cloak sends (OTLP's
/// trace export): varints, fixed-width numbers, and length-delimited fields whose length is
/// put in front of their bytes once they are written. Fields at their default value are left
/// out, as proto3 does, unless `present` (a `oneof` member, whose presence is its meaning).
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

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
        bytes.append(contentsOf: value.utf8)
    }

    /// A `bytes` field of a 64-bit number's big-endian bytes (span ids; trace ids are two).
    mutating func bigEndian(_ field: Int, _ values: UInt64...) {
        tag(field, .lengthDelimited)
        varint(UInt64(values.count * 8))
        for value in values { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
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
