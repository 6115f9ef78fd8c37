/// The bits of HTTP/1.1 syntax both directions share: what a field name and value may be (an
/// answer passed through, or a revealed value, must not end a head it is written into), and the
/// `Connection` rules.
public enum HTTPSyntax {
    /// An RFC 9110 token (`tchar+`): what a field name must be.
    public static func isToken(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        // Checked on every header of every request and answer: over the string's own bytes
        // when it has them contiguous (native strings do), a bit test per byte.
        return text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isTokenByte) }
            ?? text.utf8.allSatisfy(isTokenByte)
    }

    /// `tchar`: ALPHA, DIGIT and ``tokenPunctuation``, as bits by byte value (bytes 0–63 in the
    /// first word, 64–127 in the second). Tested against the definition.
    static let tokenBits: (UInt64, UInt64) = (0x03FF_6CFA_0000_0000, 0x57FF_FFFF_C7FF_FFFE)
    static let tokenPunctuation = "!#$%&'*+-.^_`|~"

    @inline(__always)
    static func isTokenByte(_ b: UInt8) -> Bool {
        if b < 64 { return (tokenBits.0 >> UInt64(b)) & 1 == 1 }
        if b < 128 { return (tokenBits.1 >> UInt64(b - 64)) & 1 == 1 }
        return false
    }

    /// A query safe to put in a request line: every byte RFC 3986 allows in a query is kept,
    /// `%XX` escapes are kept, and anything else (space, CR, LF, other controls, `"`, `<`, `>`,
    /// `\`, `^`, `` ` ``, `{`, `|`, `}`, `#`, a stray `%`, non-ASCII bytes) is percent-encoded,
    /// so the query can neither end the request line nor add a header.
    public static func safeQuery(_ query: String) -> String {
        let bytes = Array(query.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%"), i + 2 < bytes.count, isHex(bytes[i + 1]), isHex(bytes[i + 2]) {
                out += bytes[i...(i + 2)]
                i += 3
                continue
            }
            if isQueryByte(b) {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0x0F)]]
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// unreserved / sub-delims / ":" / "@" / "/" / "?" (RFC 3986 §3.4), without "%".
    static func isQueryByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?".utf8.contains(b)
        }
    }

    private static func isHex(_ b: UInt8) -> Bool {
        (48...57).contains(b) || (65...70).contains(b) || (97...102).contains(b)
    }

    /// Whether `value` can be a header field value as sent: no control characters but HTAB (so
    /// no CR or LF, which libevent 2.1 lets through when a space follows, as obsolete folding).
    public static func isFieldValue(_ value: String) -> Bool {
        value.utf8.withContiguousStorageIfAvailable { !$0.contains(where: isControlByte) }
            ?? !value.utf8.contains(where: isControlByte)
    }

    /// A control byte other than HTAB (CR and LF included), or DEL.
    @inline(__always)
    static func isControlByte(_ b: UInt8) -> Bool { (b < 0x20 && b != 0x09) || b == 0x7F }

    /// An ASCII letter in lower case; any other byte as it is.
    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// The value of a hex digit (chunk sizes), or nil.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
