/// The Luhn checksum as the SDK computes it (`validateWithLuhnAlgorithm`).
public enum Luhn {
    /// False for fewer than 9 characters or any non-digit; otherwise the mod-10 check.
    public static func isValid(_ number: String) -> Bool {
        let utf8 = number.utf8
        guard utf8.count >= 9 else { return false }
        var sum = 0
        for (offset, b) in utf8.reversed().enumerated() {
            guard isDigit(b) else { return false }
            let d = Int(b - 48)
            if offset % 2 == 1 {
                sum += d == 9 ? 9 : (d * 2) % 9
            } else {
                sum += d
            }
        }
        return sum % 10 == 0
    }

    /// The same check on digit values (0…9), as format-preserving aliases hold them.
    public static func isValid(numerals: [UInt8]) -> Bool {
        guard numerals.count >= 9 else { return false }
        var sum = 0
        var offset = 0
        for d in numerals.reversed() {
            guard d <= 9 else { return false }
            let v = Int(d)
            sum += offset % 2 == 1 ? (v == 9 ? 9 : (v * 2) % 9) : v
            offset += 1
        }
        return sum % 10 == 0
    }
}
