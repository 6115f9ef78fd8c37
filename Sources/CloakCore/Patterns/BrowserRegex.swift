/// Whether a configured regular expression means the same in a browser's JavaScript as in ICU,
/// for the input Cloak Elements evaluates in the browser.
///
/// The browser evaluates a field's rules itself only on printable ASCII input (0x20–0x7E):
/// there ICU's `\d`, `\w`, `\s` and `.` match what JavaScript's do, and `$` cannot stop before
/// a line terminator. What remains is syntax. This check accepts a conservative subset that both
/// engines read alike (literals, escaped punctuation, `\d \D \w \W \s \S`, classes with ranges,
/// groups `( (?: (?= (?!`, alternation, anchors, greedy and lazy quantifiers) and refuses the
/// rest (`\p{…}`, `\b`, back-references, possessive quantifiers, nested or intersected classes,
/// inline flags, look-behind, non-ASCII): the frame then asks the server instead of guessing.
public enum BrowserRegex {
    public static func isSafe(_ source: String) -> Bool {
        let b = Array(source.utf8)
        guard b.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return false }
        var i = 0
        var canQuantify = false  // an atom (or group) precedes
        var afterGroup = false  // that atom is a group: a lazy quantifier on it is refused
        var alternativeEmpty = true  // nothing yet in the current alternative
        var depth = 0
        while i < b.count {
            let c = b[i]
            let wasGroup = afterGroup
            afterGroup = false
            switch c {
            case UInt8(ascii: "\\"):
                guard i + 1 < b.count, isSafeEscape(b[i + 1], inClass: false) else { return false }
                i += 2
                canQuantify = true
            case UInt8(ascii: "["):
                guard let end = classEnd(b, from: i) else { return false }
                i = end + 1
                canQuantify = true
            case UInt8(ascii: "("):
                if i + 1 < b.count, b[i + 1] == UInt8(ascii: "?") {
                    guard i + 2 < b.count, [UInt8(ascii: ":"), UInt8(ascii: "="), UInt8(ascii: "!")].contains(b[i + 2])
                    else {
                        return false
                    }
                    i += 3
                } else {
                    i += 1
                }
                depth += 1
                canQuantify = false
                alternativeEmpty = true
                continue
            case UInt8(ascii: ")"):
                // `(a|)`: an empty alternative repeats differently in the two engines.
                guard depth > 0, !(alternativeEmpty && i > 0 && b[i - 1] == UInt8(ascii: "|")) else { return false }
                depth -= 1
                i += 1
                canQuantify = true
                afterGroup = true
                alternativeEmpty = false
                continue
            case UInt8(ascii: "|"):
                guard !alternativeEmpty else { return false }  // `(|a)`, `a||b`, `|a`
                i += 1
                canQuantify = false
                alternativeEmpty = true
                continue
            case UInt8(ascii: "^"), UInt8(ascii: "$"):
                i += 1
                canQuantify = false
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{"):
                guard canQuantify else { return false }
                if c == UInt8(ascii: "{") {
                    guard let end = braceQuantifierEnd(b, from: i) else { return false }
                    i = end + 1
                } else {
                    i += 1
                }
                if i < b.count, b[i] == UInt8(ascii: "?") {  // lazy
                    // ICU gives up (or overflows its stack) on a lazy group that can match empty.
                    if wasGroup { return false }
                    i += 1
                }
                if i < b.count, b[i] == UInt8(ascii: "+") { return false }  // possessive: ICU only
                canQuantify = false
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                return false
            default:
                i += 1
                canQuantify = true
            }
            alternativeEmpty = false
        }
        return depth == 0 && !(alternativeEmpty && b.last == UInt8(ascii: "|"))
    }

    /// Whether a transform's matcher replaces the same text in both engines: one character class,
    /// escape or character, optionally `+`. Replacing every match differs between ICU and
    /// JavaScript where a pattern can match empty text, so nothing wider is run in the browser.
    public static func isSafeTransform(_ source: String) -> Bool {
        guard isSafe(source) else { return false }
        let b = Array(source.utf8)
        var end = b.count
        if end > 1, b[end - 1] == UInt8(ascii: "+"), b.count < 2 || b[end - 2] != UInt8(ascii: "\\") { end -= 1 }
        let atom = b[..<end]
        if atom.first == UInt8(ascii: "["), let close = classEnd(b, from: 0) { return close == end - 1 }
        if atom.count == 2, atom.first == UInt8(ascii: "\\") { return true }
        return atom.count == 1 && !"()|^$.*+?{".utf8.contains(atom[atom.startIndex])
    }

    /// `\` + `e`: the class escapes and escaped punctuation, which both engines read alike.
    private static func isSafeEscape(_ e: UInt8, inClass: Bool) -> Bool {
        if "dDwWsS".utf8.contains(e) { return true }
        let isAlphanumeric = (e >= 48 && e <= 57) || (e >= 65 && e <= 90) || (e >= 97 && e <= 122)
        return !isAlphanumeric
    }

    /// The index of the `]` closing the class opened at `start`, when the class is a plain one.
    private static func classEnd(_ b: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        if i < b.count, b[i] == UInt8(ascii: "^") { i += 1 }
        guard i < b.count, b[i] != UInt8(ascii: "]") else { return nil }  // `[]…]` differs
        var previous: UInt8 = 0
        while i < b.count {
            let c = b[i]
            switch c {
            case UInt8(ascii: "]"):
                return i
            case UInt8(ascii: "["):
                return nil  // nested sets, [:alpha:]: ICU only
            case UInt8(ascii: "\\"):
                guard i + 1 < b.count, isSafeEscape(b[i + 1], inClass: true) else { return nil }
                i += 2
                previous = 0
                continue
            case UInt8(ascii: "&"), UInt8(ascii: "-"):
                if previous == c { return nil }  // && and -- are set operations in ICU
            default:
                break
            }
            previous = c
            i += 1
        }
        return nil
    }

    /// The index of the `}` of a `{n}`, `{n,}` or `{n,m}` quantifier at `start`.
    private static func braceQuantifierEnd(_ b: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        var digits = 0
        while i < b.count, b[i] >= 48 && b[i] <= 57 { i += 1; digits += 1 }
        guard digits > 0, i < b.count else { return nil }
        if b[i] == UInt8(ascii: ",") {
            i += 1
            while i < b.count, b[i] >= 48 && b[i] <= 57 { i += 1 }
        }
        return i < b.count && b[i] == UInt8(ascii: "}") ? i : nil
    }
}
