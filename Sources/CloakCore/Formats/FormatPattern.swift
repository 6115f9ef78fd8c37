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
    /// The class of each placeholder, in order.
    private let placeholderKinds: [Placeholder]
    private let allDigitPlaceholders: Bool

    enum Placeholder: Sendable {
        case digit, letter, lowercase, uppercase, alphanumeric

        init?(_ c: Character) {
            switch c {
            case "#": self = .digit
            case "@": self = .letter
            case "a": self = .lowercase
            case "A": self = .uppercase
            case "*": self = .alphanumeric
            default: return nil
            }
        }

        func accepts(ascii b: UInt8) -> Bool {
            let isDigit = b >= 48 && b <= 57
            let isUpper = b >= 65 && b <= 90
            let isLower = b >= 97 && b <= 122
            switch self {
            case .digit: return isDigit
            case .letter: return isUpper || isLower
            case .lowercase: return isLower
            case .uppercase: return isUpper
            case .alphanumeric: return isDigit || isUpper || isLower
            }
        }

        func accepts(_ ch: Character) -> Bool {
            if let a = ch.asciiValue { return accepts(ascii: a) }
            switch self {
            case .digit: return false
            case .letter, .alphanumeric: return ch.isLetter
            case .lowercase: return ch.isLowercase
            case .uppercase: return ch.isUppercase
            }
        }
    }

    public static let placeholderCharacters: Set<Character> = ["#", "@", "a", "A", "*"]

    public init(_ pattern: String) {
        self.pattern = pattern
        let chars = Array(pattern)
        self.isPlaceholder = chars.map { Self.placeholderCharacters.contains($0) }
        self.placeholderKinds = chars.compactMap(Placeholder.init)
        self.placeholderCount = placeholderKinds.count
        self.allDigitPlaceholders = placeholderKinds.allSatisfy { $0 == .digit }
    }

    public var isEmpty: Bool { pattern.isEmpty }

    /// Whether ``rawText(_:)`` of any `count` ASCII digits (with nothing else) is those digits:
    /// every placeholder is `#` and there are at least `count` of them.
    func keepsDigits(count: Int) -> Bool {
        placeholderCount >= count && allDigitPlaceholders
    }

    /// The raw text: the input's characters that fit the pattern's placeholders, at most
    /// ``placeholderCount`` of them. An empty pattern keeps the input as it is.
    ///
    /// As the SDK's masked field does: the input is walked once; each placeholder takes the next
    /// input character of its class (`#` an ASCII digit, `@` a letter, `a` a lowercase letter,
    /// `A` an uppercase letter, `*` a letter or ASCII digit) and characters that fit no class are
    /// skipped. Digits of other scripts are never card digits.
    public func rawText(_ input: String) -> String {
        guard !isEmpty else { return input }
        var copy = input
        if let ascii = copy.withUTF8({ bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var cursor = 0
            return String(unsafeUninitializedCapacity: min(bytes.count, placeholderCount)) { out in
                var kept = 0
                for kind in placeholderKinds {
                    while cursor < bytes.count, !kind.accepts(ascii: bytes[cursor]) { cursor += 1 }
                    guard cursor < bytes.count else { break }
                    out[kept] = bytes[cursor]
                    kept += 1
                    cursor += 1
                }
                return kept
            }
        }) {
            return ascii
        }
        var out = ""
        var iterator = input.makeIterator()
        for kind in placeholderKinds {
            var next = iterator.next()
            while let ch = next, !kind.accepts(ch) { next = iterator.next() }
            guard let ch = next else { break }
            out.append(ch)
        }
        return out
    }

    /// The output text: `raw` laid over the pattern with literals replaced by `divider`.
    ///
    /// With an empty pattern or an empty divider the output text is the raw text (SDK
    /// `getSecureTextWithDivider`). The layout stops after the last filled placeholder.
    public func outputText(raw: String, divider: String) -> String {
        guard !isEmpty, !divider.isEmpty else { return raw }
        var rawCopy = raw, dividerCopy = divider
        let ascii = rawCopy.withUTF8 { rawBytes in
            dividerCopy.withUTF8 { dividerBytes -> String? in
                guard rawBytes.allSatisfy({ $0 < 0x80 }), dividerBytes.allSatisfy({ $0 < 0x80 }) else { return nil }
                guard !rawBytes.isEmpty else { return "" }
                // Each pattern position writes one raw byte or one divider at most.
                return String(unsafeUninitializedCapacity: isPlaceholder.count * max(1, dividerBytes.count)) { out in
                    var written = 0
                    var taken = 0
                    var pending = 0
                    for placeholder in isPlaceholder {
                        guard placeholder else { pending += 1; continue }
                        for _ in 0..<pending {
                            for b in dividerBytes { out[written] = b; written += 1 }
                        }
                        pending = 0
                        out[written] = rawBytes[taken]
                        written += 1
                        taken += 1
                        if taken == rawBytes.count { break }
                    }
                    return written
                }
            }
        }
        if let ascii { return ascii }
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
}
