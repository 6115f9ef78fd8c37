/// Bytes written into one allocation sized up front (a message's head and body): each piece is
/// one `memcpy`, with no capacity check, growth or generic `append(contentsOf:)` per piece (20
/// of those were about 2,300 instructions an answer). The size is a bound the writer computes;
/// a write past it traps rather than overflow.
struct ByteWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    /// An array of at most `capacity` bytes, as `body` writes them.
    static func bytes(capacity: Int, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: max(capacity, 1)) { buffer, initialized in
            var writer = ByteWriter(base: buffer.baseAddress!, capacity: buffer.count)
            body(&writer)
            initialized = writer.count
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(count + bytes.count <= capacity, "a message longer than its writer's bound")
        (base + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    @inline(__always)
    mutating func write(_ text: String) {
        if let done: Void = text.utf8.withContiguousStorageIfAvailable({ write(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    mutating func write(_ text: StaticString) {
        write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func write(_ byte: UInt8) {
        precondition(count < capacity, "a message longer than its writer's bound")
        base[count] = byte
        count += 1
    }

    /// A non-negative number's decimal digits (at most 19).
    mutating func writeDecimal(_ value: Int) {
        precondition(value >= 0, "a negative length or status")
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            write(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
