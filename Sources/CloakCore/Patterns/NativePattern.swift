/// Hand-written matchers for the SDK's default field regexes.
///
/// Each decides inputs made of ASCII characters and returns `nil` for anything else (ICU's `\d`
/// and `\s` also match non-ASCII digits and spaces), which sends the input to ICU. A test runs
/// each matcher against ICU over a generated corpus.
struct NativePattern: Sendable {
    private let matcher: @Sendable (UnsafeBufferPointer<UInt8>) -> Bool

    init?(source: String) {
        switch source {
        case FieldType.cvc.defaultRegex: matcher = { $0.allSatisfy(isDigit) }
        case FieldType.expDate.defaultRegex: matcher = Self.expDate
        case FieldType.date.defaultRegex: matcher = Self.date
        case FieldType.cardHolderName.defaultRegex: matcher = Self.cardHolderName
        case FieldType.ssn.defaultRegex: matcher = Self.ssn
        // Single-position classes, as Basis Theory masks use them.
        case #"\d"#, "[0-9]": matcher = { $0.count == 1 && isDigit($0[0]) }
        case "[a-zA-Z]", "[A-Za-z]": matcher = { $0.count == 1 && ($0[0] | 0x20 >= 97 && $0[0] | 0x20 <= 122) }
        default:
            guard let simple = SimplePattern(source: source) else { return nil }
            matcher = { simple.wholeMatch($0) }
        }
    }

    func wholeMatch(_ input: String) -> Bool? {
        var copy = input
        return copy.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 } ? matcher(bytes) : nil }
    }

    // ^(0[1-9]|1[0-2])\/?([0-9]{4}|[0-9]{2})$
    private static func expDate(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard b.count >= 4, isDigit(b[0]), isDigit(b[1]) else { return false }
        let month = Int(b[0] - 48) * 10 + Int(b[1] - 48)
        guard (1...12).contains(month) else { return false }
        var rest = b[2...]
        if rest.first == UInt8(ascii: "/") { rest = rest.dropFirst() }
        return (rest.count == 4 || rest.count == 2) && rest.allSatisfy(isDigit)
    }

    // ^([0-9]{4}|[0-9]{2})\/?([0-9]{2})\/?([0-9]{4}|[0-9]{2})$
    private static func date(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for first in [4, 2] {
            for slash1 in [true, false] {
                for slash2 in [true, false] {
                    let thirdLength = b.count - first - 2 - (slash1 ? 1 : 0) - (slash2 ? 1 : 0)
                    guard thirdLength == 4 || thirdLength == 2 else { continue }
                    // A slash where this layout has one (-1: none), a digit everywhere else.
                    let firstSlash = slash1 ? first : -1
                    let secondSlash = slash2 ? first + (slash1 ? 1 : 0) + 2 : -1
                    let fits = b.indices.allSatisfy { i in
                        i == firstSlash || i == secondSlash ? b[i] == UInt8(ascii: "/") : isDigit(b[i])
                    }
                    if fits { return true }
                }
            }
        }
        return false
    }

    // ^([a-zA-Z0-9\ \,\.\-\']{2,})$
    private static func cardHolderName(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        b.count >= 2
            && b.allSatisfy { c in
                isDigit(c) || (c | 0x20 >= 97 && c | 0x20 <= 122) || c == 0x20 || c == 0x2C || c == 0x2E || c == 0x2D
                    || c == 0x27
            }
    }

    // ^(?!(000|666|9))(\d{3}(-|\s)?(?!(00))\d{2}(-|\s)?(?!(0000))\d{4})$
    private static func ssn(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        func isSeparator(_ c: UInt8) -> Bool { c == 0x2D || c == 0x20 || (0x09...0x0D).contains(c) }
        var i = 0
        /// The next `n` bytes as a number when they are all digits (and advances past them).
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var value = 0
            for c in b[i..<(i + n)] {
                guard isDigit(c) else { return nil }
                value = value * 10 + Int(c - 48)
            }
            i += n
            return value
        }
        guard let area = digits(3), area != 0, area != 666, area < 900 else { return false }
        if i < b.count, isSeparator(b[i]) { i += 1 }
        guard let group = digits(2), group != 0 else { return false }
        if i < b.count, isSeparator(b[i]) { i += 1 }
        guard let serial = digits(4), serial != 0 else { return false }
        return i == b.count
    }
}

@inline(__always)
func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
