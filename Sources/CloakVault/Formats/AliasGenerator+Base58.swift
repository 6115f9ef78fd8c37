/// Bitcoin-style base58 (no 0, O, I, l).
enum Base58 {
    static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)

    /// Encodes `bytes` as exactly `width` characters (left-padded with "1", the zero digit):
    /// the `width` least significant base-58 digits of the big-endian number.
    ///
    /// The number is divided in 32-bit limbs by 58^5, five digits per pass (the byte-by-byte
    /// long division it replaces spent about a microsecond on a 16-byte token).
    static func encode(_ bytes: [UInt8], width: Int) -> String {
        var limbs: [UInt32] = []  // most significant first
        limbs.reserveCapacity(bytes.count / 4 + 1)
        var acc: UInt32 = 0
        for (i, b) in bytes.enumerated() {
            acc = acc << 8 | UInt32(b)
            if (bytes.count - 1 - i) % 4 == 0 {
                limbs.append(acc)
                acc = 0
            }
        }
        let fiveDigits: UInt64 = 656_356_768  // 58^5
        var digits: [UInt8] = []  // least significant first
        digits.reserveCapacity(max(width, bytes.count * 2))
        var start = 0
        while start < limbs.count {
            var remainder: UInt64 = 0
            for i in start..<limbs.count {
                let value = remainder << 32 | UInt64(limbs[i])
                limbs[i] = UInt32(value / fiveDigits)
                remainder = value % fiveDigits
            }
            while start < limbs.count && limbs[start] == 0 { start += 1 }
            for _ in 0..<5 {
                digits.append(alphabet[Int(remainder % 58)])
                remainder /= 58
            }
        }
        while digits.count < width { digits.append(alphabet[0]) }
        return String(decoding: digits.prefix(width).reversed(), as: UTF8.self)
    }
}
