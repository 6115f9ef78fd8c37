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
                    var layout: [Bool] = Array(repeating: true, count: first)  // true = digit expected
                    if slash1 { layout.append(false) }
                    layout += [true, true]
                    if slash2 { layout.append(false) }
                    layout += Array(repeating: true, count: thirdLength)
                    if zip(b, layout).allSatisfy({ $1 ? isDigit($0) : $0 == UInt8(ascii: "/") }) { return true }
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
        func digits(_ n: Int) -> [UInt8]? {
            guard i + n <= b.count else { return nil }
            let run = Array(b[i..<(i + n)])
            guard run.allSatisfy(isDigit) else { return nil }
            i += n
            return run
        }
        guard let area = digits(3), area != Array("000".utf8), area != Array("666".utf8), area[0] != UInt8(ascii: "9")
        else { return false }
        if i < b.count, isSeparator(b[i]) { i += 1 }
        guard let group = digits(2), group != Array("00".utf8) else { return false }
        if i < b.count, isSeparator(b[i]) { i += 1 }
        guard let serial = digits(4), serial != Array("0000".utf8) else { return false }
        return i == b.count
    }
}

@inline(__always)
func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
