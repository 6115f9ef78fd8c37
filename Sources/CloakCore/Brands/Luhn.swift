/// The Luhn checksum as the SDK computes it (`validateWithLuhnAlgorithm`).
public enum Luhn {
    /// False for fewer than 9 characters or any non-digit; otherwise the mod-10 check.
    public static func isValid(_ number: String) -> Bool {
        var number = number
        return number.withUTF8 { utf8 in
            guard utf8.count >= 9 else { return false }
            var sum = 0
            var doubled = false  // every second digit from the right
            for i in utf8.indices.reversed() {
                let b = utf8[i]
                guard isDigit(b) else { return false }
                let d = Int(b - 48)
                sum += doubled ? (d == 9 ? 9 : (d * 2) % 9) : d
                doubled.toggle()
            }
            return sum % 10 == 0
        }
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
