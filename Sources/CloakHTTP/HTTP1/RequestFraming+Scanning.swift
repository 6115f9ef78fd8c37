extension RequestFraming {
    // MARK: Scanning

    /// The index of the first control byte from `start` (below 0x20: CR, LF, HTAB, NUL...; or
    /// DEL, 0x7F, which is no field-vchar either, RFC 9110 5.5), or the count. Eight bytes at a
    /// time: `(w - 0x20…) & ~w & 0x80…` marks the bytes below 0x20, and the same test on
    /// `w ^ 0x7F…` with `0x01…` marks the DELs; a borrow can mark a byte above a marked one of
    /// its own test, never below, so the lowest mark of either is exact.
    static func firstControlByte(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        while n - i >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let del = word ^ 0x7F7F_7F7F_7F7F_7F7F
            let marks =
                ((word &- 0x2020_2020_2020_2020) & ~word | (del &- 0x0101_0101_0101_0101) & ~del)
                & 0x8080_8080_8080_8080
            if marks != 0 { return i + marks.trailingZeroBitCount / 8 }
            i += 8
        }
        while i < n, bytes[i] >= 0x20, bytes[i] != 0x7F { i += 1 }
        return i
    }

    /// The bytes the scan looks for.
    enum Byte {
        static let cr = UInt8(ascii: "\r")
        static let lf = UInt8(ascii: "\n")
        static let htab = UInt8(ascii: "\t")
        static let space = UInt8(ascii: " ")
        static let colon = UInt8(ascii: ":")
        static let semicolon = UInt8(ascii: ";")
        static let zero = UInt8(ascii: "0")
        static let nine = UInt8(ascii: "9")
    }
}
