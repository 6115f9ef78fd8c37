/// Card numbers a message carries (issue 57): what an inbound route looks for in what it is about
/// to forward, so that a selector with a typo, or a field nobody named, never sends a raw card.
///
/// A card is a run of 13 to 19 decimal digits (any script's: full-width `４` counts) in groups
/// that separators may split (spaces of any width, tabs, dashes and other hyphens, dots,
/// underscores, slashes; at most three in a row), where invisible characters (zero-width spaces,
/// combining marks) are skipped, that passes Luhn and starts like a known brand
/// (``CardBrandTable/standard``). Every span of whole groups is tried, so two cards written one
/// after the other, or a card followed by its expiry (`4111…1111-12/30`), are found; a plain run
/// of more than 19 digits is an identifier, not a card. The brand prefix keeps millisecond
/// timestamps and most order numbers out. Linear in the text: each span is checked with prefix
/// sums, and a string is made only for a span that passes Luhn.
public enum CardScan {
    public struct Finding: Sendable {
        /// Where the card is, never what it is: a JSON path (`$.payment.card_numbr`,
        /// `$.items[2]['pan']`; a key that holds a card is written `['<card>']`), `form:KEY`,
        /// `query:KEY`, `header:NAME` (`header:<card>` for a name that is one), `path` or `body`
        /// (a body that is neither JSON nor a form).
        public let place: String
        /// The card as written (with its separators).
        public let text: Sensitive<String>
        /// Whether the card is the whole value (not a part of a longer text).
        public let whole: Bool

        public init(place: String, text: String, whole: Bool) {
            self.place = place
            self.text = Sensitive(text)
            self.whole = whole
        }
    }

    /// The card numbers in `text`, each as written.
    public static func cards<S: StringProtocol>(in text: S) -> [Substring] {
        let s = Substring(text)
        // Most texts (a header, a name, an amount) cannot hold one: fewer than 13 ASCII digits and
        // nothing else that could be a digit. One pass over the bytes, nothing made.
        var asciiDigits = 0
        var other = false
        for b in s.utf8 {
            if b >= 0x30 && b <= 0x39 { asciiDigits += 1 } else if b >= 0x80 { other = true }
        }
        if asciiDigits < 13 && !other { return [] }
        let scalars = s.unicodeScalars
        var found: [Substring] = []
        // The run being read: its digits, and each group's first digit and bounds in `scalars`.
        var digits: [UInt8] = []
        var groups: [(firstDigit: Int, start: String.Index, end: String.Index)] = []
        var separators = 0
        func flush() {
            defer {
                digits.removeAll(keepingCapacity: true)
                groups.removeAll(keepingCapacity: true)
            }
            guard digits.count >= 13 else { return }
            // Prefix sums pay off on long runs; a short one (a card, an alias) is checked directly.
            let luhn = digits.count > 64 ? LuhnSums(digits) : nil
            var i = 0
            while i < groups.count {
                var hit: Int?
                var j = i
                while j < groups.count {
                    let end = j + 1 < groups.count ? groups[j + 1].firstDigit : digits.count
                    let count = end - groups[i].firstDigit
                    if count > 19 { break }
                    if count >= 13,
                        luhn?.isValid(from: groups[i].firstDigit, to: end)
                            ?? Luhn.isValid(numerals: Array(digits[groups[i].firstDigit..<end])),
                        isBrand(digits[groups[i].firstDigit..<end])
                    {
                        hit = j
                    }
                    j += 1
                }
                if let hit {
                    found.append(Substring(scalars[groups[i].start..<groups[hit].end]))
                    i = hit + 1
                } else {
                    i += 1
                }
            }
        }
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let next = scalars.index(after: index)
            if let digit = decimalValue(scalar) {
                if groups.isEmpty || separators > 0 {
                    groups.append((digits.count, index, next))
                } else {
                    groups[groups.count - 1].end = next  // the group goes on (invisible characters skipped)
                }
                digits.append(digit)
                separators = 0
            } else if isIgnorable(scalar) {
                // Invisible: neither ends a run nor separates groups.
            } else if isSeparator(scalar), !groups.isEmpty, separators < 3 {
                separators += 1
            } else {
                flush()
                separators = 0
            }
            index = next
        }
        flush()
        return found
    }

    /// A decimal digit's value in any script (`4`, `４`, `٤`).
    static func decimalValue(_ scalar: Unicode.Scalar) -> UInt8? {
        if scalar.isASCII { return scalar.value >= 0x30 && scalar.value <= 0x39 ? UInt8(scalar.value - 0x30) : nil }
        guard scalar.properties.numericType == .decimal, let value = scalar.properties.numericValue,
            value >= 0, value <= 9
        else { return nil }
        return UInt8(value)
    }

    /// Characters that may sit between a card's groups.
    static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20, 0x09, 0x2D, 0x2E, 0x5F, 0x2F, 0xA0, 0x2000...0x200A, 0x2010...0x2015, 0x202F, 0x205F, 0x2212,
            0x3000, 0xFE63, 0xFF0D, 0xFF0E:
            return true
        default: return false
        }
    }

    /// Characters nobody sees (zero-width spaces and joiners, byte order marks, soft hyphens,
    /// combining marks): skipped inside a run.
    static func isIgnorable(_ scalar: Unicode.Scalar) -> Bool {
        guard !scalar.isASCII else { return false }
        switch scalar.properties.generalCategory {
        case .format, .nonspacingMark, .enclosingMark, .spacingMark: return true
        default: return false
        }
    }

    /// Whether digits start like a brand's card (a Luhn-valid span was found: this runs rarely).
    static func isBrand(_ digits: ArraySlice<UInt8>) -> Bool {
        let text = String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self)
        return CardBrandTable.standard.detect(text).brand != .unknown
    }

    /// Luhn sums of every span of a run in constant time: prefix sums of the digits as they are
    /// and doubled, split by position parity (a digit is doubled when its distance from the
    /// span's last digit is odd).
    struct LuhnSums {
        private var plain: [[Int]]
        private var doubled: [[Int]]

        init(_ digits: [UInt8]) {
            plain = [[0], [0]]
            doubled = [[0], [0]]
            plain[0].reserveCapacity(digits.count + 1)
            for (m, d) in digits.enumerated() {
                let v = Int(d)
                let dv = v == 9 ? 9 : (v * 2) % 9
                for p in 0..<2 {
                    plain[p].append(plain[p][m] + (m % 2 == p ? v : 0))
                    doubled[p].append(doubled[p][m] + (m % 2 == p ? dv : 0))
                }
            }
        }

        /// Whether digits `from..<to` pass Luhn.
        func isValid(from: Int, to: Int) -> Bool {
            let last = (to - 1) % 2
            let kept = plain[last][to] - plain[last][from]
            let twice = doubled[1 - last][to] - doubled[1 - last][from]
            return (kept + twice) % 10 == 0
        }
    }

}
