/// A VGS Collect format pattern such as `"#### #### #### ####"`.
///
/// `#` digit, `@` letter, `a` lowercase letter, `A` uppercase letter, `*` letter or digit; every
/// other character is a literal. The pattern does two things on the server, as on the device:
/// it caps and normalises the *raw text* (input filtered to letters and digits, cut to the number
/// of placeholders), and it lays the raw text out again for the *output text*, with each literal
/// replaced by the divider when one is set.
public struct FormatPattern: Sendable, Equatable {
    public let pattern: String
    /// For each position of the pattern: true where it is a placeholder.
    private let isPlaceholder: [Bool]
    public let placeholderCount: Int

    public static let placeholderCharacters: Set<Character> = ["#", "@", "a", "A", "*"]

    public init(_ pattern: String) {
        self.pattern = pattern
        let chars = Array(pattern)
        self.isPlaceholder = chars.map { Self.placeholderCharacters.contains($0) }
        self.placeholderCount = isPlaceholder.lazy.filter { $0 }.count
    }

    public var isEmpty: Bool { pattern.isEmpty }

    /// The raw text: the input's letters and digits, at most ``placeholderCount`` of them.
    /// An empty pattern keeps the input as it is.
    public func rawText(_ input: String) -> String {
        guard !isEmpty else { return input }
        var copy = input
        if let ascii = copy.withUTF8({ bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var kept = 0
            return String(unsafeUninitializedCapacity: min(bytes.count, placeholderCount)) { out in
                for b in bytes where kept < placeholderCount
                    && ((b >= 48 && b <= 57) || (b | 0x20 >= 97 && b | 0x20 <= 122)) {
                    out[kept] = b
                    kept += 1
                }
                return kept
            }
        }) {
            return ascii
        }
        var out = ""
        out.reserveCapacity(placeholderCount)
        var taken = 0
        for ch in input where taken < placeholderCount && Self.isAlphanumeric(ch) {
            out.append(ch)
            taken += 1
        }
        return out
    }

    /// The output text: `raw` laid over the pattern with literals replaced by `divider`.
    ///
    /// With an empty pattern or an empty divider the output text is the raw text (SDK
    /// `getSecureTextWithDivider`). The layout stops after the last filled placeholder.
    public func outputText(raw: String, divider: String) -> String {
        guard !isEmpty, !divider.isEmpty else { return raw }
        var out = ""
        var iterator = raw.makeIterator()
        guard var next = iterator.next() else { return "" }
        var pendingLiterals = ""
        for placeholder in isPlaceholder {
            if placeholder {
                out += pendingLiterals
                pendingLiterals = ""
                out.append(next)
                guard let n = iterator.next() else { return out }
                next = n
            } else {
                pendingLiterals += divider
            }
        }
        return out
    }

    /// Letters, marks and digits: Foundation's `CharacterSet.alphanumerics`, which the SDK filters with.
    @inline(__always)
    static func isAlphanumeric(_ ch: Character) -> Bool {
        if let a = ch.asciiValue {
            return (a >= 48 && a <= 57) || (a | 0x20 >= 97 && a | 0x20 <= 122)
        }
        return ch.unicodeScalars.allSatisfy { s in
            let p = s.properties
            return p.isAlphabetic || p.numericType != nil || p.generalCategory == .nonspacingMark
                || p.generalCategory == .spacingMark || p.generalCategory == .enclosingMark
        }
    }
}
