extension RequestFraming {
    // MARK: Line buffer

    /// The first ``capacity`` bytes of a line, inline.
    struct LineBuffer: Sendable, Equatable {
        static let capacity = 64
        private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        private(set) var count = 0

        /// Appends what fits of `bytes[range]`.
        mutating func append(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
            let taken = min(Self.capacity - count, range.count)
            guard taken > 0, let source = bytes.baseAddress else { return }
            let offset = count
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.baseAddress!.advanced(by: offset).copyMemory(from: source + range.lowerBound, byteCount: taken)
            }
            count += taken
        }

        mutating func removeAll() { count = 0 }

        subscript(index: Int) -> UInt8 {
            precondition(index < count)
            return withUnsafeBytes(of: storage) { $0[index] }
        }

        /// Whether the bytes kept start with `prefix` exactly.
        func hasPrefix(_ prefix: StaticString) -> Bool {
            let length = prefix.utf8CodeUnitCount
            guard length <= count else { return false }
            for k in 0..<length where self[k] != prefix.utf8Start[k] { return false }
            return true
        }

        /// Whether the bytes at `offset` are `lowercase` (ASCII letters and `-`) in any case. Setting
        /// bit 5 maps a letter to its lower case and `-` to itself; only CR, never kept, maps to `-`
        /// too.
        func hasLowercasedPrefix(_ lowercase: StaticString, at offset: Int = 0) -> Bool {
            let length = lowercase.utf8CodeUnitCount
            guard offset + length <= count else { return false }
            for k in 0..<length where self[offset + k] | 0x20 != lowercase.utf8Start[k] { return false }
            return true
        }

        static func == (a: LineBuffer, b: LineBuffer) -> Bool {
            guard a.count == b.count else { return false }
            for k in 0..<a.count where a[k] != b[k] { return false }
            return true
        }
    }
}
