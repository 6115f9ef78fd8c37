extension JSONReader {
    /// The bytes of the string at the cursor when it has no escape (and moves past it); nil,
    /// with the cursor unmoved, for a string with escapes.
    mutating func plainString() throws(JSONParseError) -> UnsafeBufferPointer<UInt8>? {
        let start = index + 1
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                index = i + 1
                return UnsafeBufferPointer(rebasing: bytes[start..<i])
            }
            if b == UInt8(ascii: "\\") { return nil }
            if b < 0x20 { index = i; throw fail(.controlCharacterInString) }
            i += 1
        }
        index = i
        throw fail(.unexpectedEnd)
    }

    mutating func string() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail(.controlCharacterInString) }
            index += 1
        }
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): try unicodeEscape(into: &out)
                default: throw fail(.invalidEscape)
                }
            default:
                if b < 0x20 { throw fail(.controlCharacterInString) }
                out.append(b)
                index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail(.unexpectedEnd) }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail(.invalidEscape)
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    mutating func unicodeEscape(into out: inout [UInt8]) throws(JSONParseError) {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail(.invalidEscape) }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail(.invalidEscape) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail(.invalidEscape)
        }
        guard let u = Unicode.Scalar(scalar) else { throw fail(.invalidEscape) }
        out.append(contentsOf: UTF8.encode(u)!)
    }
}
