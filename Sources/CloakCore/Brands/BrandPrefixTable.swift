/// A brand regex of the form `^(alt1|alt2|…)\d*$` held as a table of prefix rules.
///
/// Each rule is written in a tiny notation: a digit is itself, `[0-35-9]` a class, `[^4]` any
/// character but 4. A number matches when it starts with a rule's prefix, does not start with
/// the rule's `unless` prefix (the regex's negative look-ahead), and is digits after it.
struct BrandPrefixTable: Sendable {
    struct Rule: Sendable {
        /// One entry per position: accepted byte ranges, and whether the class is negated.
        let positions: [(ranges: [ClosedRange<UInt8>], negated: Bool)]
        let unless: [UInt8]?
    }
    let rules: [Rule]

    init(_ specs: [String], unless: [String: String] = [:]) {
        rules = specs.map { spec in Rule(positions: Self.parse(spec), unless: unless[spec].map { Array($0.utf8) }) }
    }

    private static func parse(_ spec: String) -> [(ranges: [ClosedRange<UInt8>], negated: Bool)] {
        var out: [(ranges: [ClosedRange<UInt8>], negated: Bool)] = []
        var bytes = Array(spec.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "[") {
                var negated = false
                if bytes.first == UInt8(ascii: "^") {
                    negated = true
                    bytes = bytes.dropFirst()
                }
                var ranges: [ClosedRange<UInt8>] = []
                while let c = bytes.popFirst(), c != UInt8(ascii: "]") {
                    if bytes.first == UInt8(ascii: "-"), let hi = bytes.dropFirst().first {
                        ranges.append(c...hi)
                        bytes = bytes.dropFirst(2)
                    } else {
                        ranges.append(c...c)
                    }
                }
                out.append((ranges, negated))
            } else {
                out.append(([b...b], false))
            }
        }
        return out
    }

    /// Matches an ASCII number (the caller sends anything else to the regex).
    func matches(ascii bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        rules.contains { rule in
            guard bytes.count >= rule.positions.count else { return false }
            for (i, p) in rule.positions.enumerated() {
                let inClass = p.ranges.contains { $0.contains(bytes[i]) }
                if inClass == p.negated { return false }
            }
            if let unless = rule.unless, bytes.starts(with: unless) { return false }
            return bytes[rule.positions.count...].allSatisfy(isDigit)
        }
    }
}
