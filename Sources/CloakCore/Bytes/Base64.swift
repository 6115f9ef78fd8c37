/// Base64 for the headers and tokens Cloak writes (digests, signatures, JOSE): standard with
/// padding (RFC 4648 4), or URL-safe without it (RFC 4648 5, as JOSE and RFC 7515 2 use it).
/// Decoding a whole text is strict (``decode(_:url:)``); decoding as bytes arrive is
/// ``Base64Stream``'s.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// URL-safe, unpadded (`base64url` of RFC 7515).
    public static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        var text = Array(encode(bytes).utf8)
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        for i in text.indices {
            if text[i] == UInt8(ascii: "+") { text[i] = UInt8(ascii: "-") }
            if text[i] == UInt8(ascii: "/") { text[i] = UInt8(ascii: "_") }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil unless it is canonical: standard with padding, or
    /// (`url`) URL-safe without; no whitespace, and no stray bits in the last character.
    public static func decode(_ text: some StringProtocol, url: Bool = false) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for c in text.utf8 {
            if c == UInt8(ascii: "=") && !url {
                padding += 1
                continue
            }
            guard padding == 0, let v = value(c, url: url) else { return nil }
            values.append(v)
        }
        let rest = values.count % 4
        if url {
            guard rest != 1 else { return nil }
        } else {
            guard rest == 0 ? padding == 0 : (rest > 1 && padding == 4 - rest) else { return nil }
        }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 4 <= values.count {
            let n =
                UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6
                | UInt32(values[i + 3])
            out += [UInt8(n >> 16 & 255), UInt8(n >> 8 & 255), UInt8(n & 255)]
            i += 4
        }
        if rest == 2 {
            guard values[i + 1] & 15 == 0 else { return nil }
            out.append(values[i] << 2 | values[i + 1] >> 4)
        } else if rest == 3 {
            guard values[i + 2] & 3 == 0 else { return nil }
            out.append(values[i] << 2 | values[i + 1] >> 4)
            out.append(values[i + 1] << 4 | values[i + 2] >> 2)
        }
        return out
    }

    private static func value(_ c: UInt8, url: Bool) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - 65
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - 97 + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 48 + 52
        case UInt8(ascii: "+") where !url, UInt8(ascii: "-") where url: 62
        case UInt8(ascii: "/") where !url, UInt8(ascii: "_") where url: 63
        default: nil
        }
    }

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ encodeStandard($0) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { encodeStandard($0) }
    }

    /// The text written straight into the string's storage: no array a call (callgrind counted
    /// 7,000 instructions for a 32-byte digest when each group of three made one).
    private static func encodeStandard(_ input: UnsafeBufferPointer<UInt8>) -> String {
        let count = (input.count + 2) / 3 * 4
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { out in
            alphabet.withUnsafeBufferPointer { table in
                var i = 0, o = 0
                while i + 3 <= input.count {
                    let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    out[o + 2] = table[Int(n >> 6 & 63)]
                    out[o + 3] = table[Int(n & 63)]
                    i += 3
                    o += 4
                }
                let rest = input.count - i
                if rest > 0 {
                    let n = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    out[o + 2] = rest == 2 ? table[Int(n >> 6 & 63)] : UInt8(ascii: "=")
                    out[o + 3] = UInt8(ascii: "=")
                }
            }
            return count
        }
    }
}
