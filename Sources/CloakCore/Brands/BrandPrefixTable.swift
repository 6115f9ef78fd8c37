/// A brand regex of the form `^(alt1|alt2|…)\d*$` held as a table of prefix rules.
///
/// Each rule is written in a tiny notation: a digit is itself, `[0-35-9]` a class, `[^4]` any
/// character but 4. A number matches when it starts with a rule's prefix, does not start with
/// the rule's `unless` prefix (the regex's negative look-ahead), and is digits after it.
struct BrandPrefixTable: Sendable {
    struct Rule: Sendable {
        /// One mask per position: bit d accepts the digit d, bit 10 any byte that is not a digit.
        let positions: [UInt16]
        let unless: [UInt8]?
    }
    let rules: [Rule]

    init(_ specs: [String], unless: [String: String] = [:]) {
        rules = specs.map { spec in Rule(positions: Self.parse(spec), unless: unless[spec].map { Array($0.utf8) }) }
    }

    private static let anyOther: UInt16 = 1 << 10

    /// The bit of one input byte in a position's mask.
    @inline(__always)
    private static func bit(_ b: UInt8) -> UInt16 { b &- 0x30 < 10 ? 1 << (b &- 0x30) : anyOther }

    private static func parse(_ spec: String) -> [UInt16] {
        var out: [UInt16] = []
        var bytes = Array(spec.utf8)[...]
        while let b = bytes.popFirst() {
            var negated = false
            var ranges: [ClosedRange<UInt8>] = []
            if b == UInt8(ascii: "[") {
                if bytes.first == UInt8(ascii: "^") {
                    negated = true
                    bytes = bytes.dropFirst()
                }
                while let c = bytes.popFirst(), c != UInt8(ascii: "]") {
                    if bytes.first == UInt8(ascii: "-"), let hi = bytes.dropFirst().first {
                        ranges.append(c...hi)
                        bytes = bytes.dropFirst(2)
                    } else {
                        ranges.append(c...c)
                    }
                }
            } else {
                ranges.append(b...b)
            }
            // The tables are built in and speak of digits only, so one bit stands for every other byte.
            precondition(
                ranges.allSatisfy { $0.lowerBound >= 0x30 && $0.upperBound <= 0x39 },
                "brand prefix \(spec): digits only")
            var mask: UInt16 = negated ? anyOther : 0
            for d: UInt8 in 0...9 where ranges.contains(where: { $0.contains(0x30 + d) }) != negated { mask |= 1 << d }
            out.append(mask)
        }
        return out
    }

    /// Whether a number starting with `digit` (0...9) can match: detection skips the tables that cannot.
    func admits(firstDigit digit: Int) -> Bool {
        rules.contains { $0.positions.first.map { $0 & (1 << digit) != 0 } ?? true }
    }

    /// Matches an ASCII number (the caller sends anything else to the regex).
    func matches(ascii bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        rules.contains { rule in
            let n = rule.positions.count
            guard bytes.count >= n else { return false }
            for i in 0..<n where rule.positions[i] & Self.bit(bytes[i]) == 0 { return false }
            if let unless = rule.unless, bytes.starts(with: unless) { return false }
            return bytes[n...].allSatisfy { $0 &- 0x30 < 10 }
        }
    }
}
