/// Reads the fields of a protocol buffers message, one at a time: what the trace export needs
/// of a collector's answer (``OTLPTraceEncoding/rejectedSpans(_:)``). A malformed message ends
/// the reading (no field is made up from it); groups and unknown wire types end it too.
struct ProtobufReader {
    enum Value: Equatable {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        /// A length-delimited field's bytes, as a range of the message.
        case bytes(Range<Int>)
    }

    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next field's number and value, or nil at the end (or at something malformed).
    mutating func next() -> (field: Int, value: Value)? {
        guard offset < bytes.count, let key = varint(), key >> 3 > 0, key >> 3 <= UInt64(Int32.max) else {
            return nil
        }
        let field = Int(key >> 3)
        switch key & 7 {
        case 0:
            guard let value = varint() else { return nil }
            return (field, .varint(value))
        case 1:
            guard bytes.count - offset >= 8 else { return nil }
            defer { offset += 8 }
            return (field, .fixed64(little(8)))
        case 5:
            guard bytes.count - offset >= 4 else { return nil }
            defer { offset += 4 }
            return (field, .fixed32(UInt32(little(4))))
        case 2:
            guard let length = varint(), length <= UInt64(bytes.count - offset) else { return nil }
            let range = offset..<(offset + Int(length))
            offset = range.upperBound
            return (field, .bytes(range))
        default:
            offset = bytes.count
            return nil
        }
    }

    private mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count && shift < 64 {
            let byte = bytes[offset]
            offset += 1
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        offset = bytes.count
        return nil
    }

    private func little(_ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for k in 0..<count { value |= UInt64(bytes[offset + k]) << (8 * UInt64(k)) }
        return value
    }
}
