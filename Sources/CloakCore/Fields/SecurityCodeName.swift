/// Whether a field's name says it holds a card's security code (issue 76): such a value never
/// joins a group and is never imported, whatever its field's type says (a `text` field named
/// `cvv` is refused as a `cvc` field is). Case, `_`, `-`, `.` and spaces are ignored, so
/// `CVV2`, `card_cvc`, `cvc_number`, `cc-cvv` and `security-code` all are.
public enum SecurityCodeName {
    /// Whole names, as compared (lower case, letters and digits only): short ones that are
    /// parts of other words (`csc`, `cvd`…) are taken only whole (not `cid`: a customer id as often).
    static let names: [[UInt8]] = ["csc", "cav2", "cvn", "cvd", "cardcode"].map { Array($0.utf8) }
    /// Parts that name a security code wherever they appear (`cc_cvv`, `cvc_number`, `ccv`).
    static let parts: [[UInt8]] = ["cvv", "cvc", "ccv", "securitycode"].map { Array($0.utf8) }

    /// Asked for every field of every submission and import row: an ASCII name is folded on its
    /// bytes; any other is lower-cased as Unicode first (`İ` and the Kelvin sign fold to ASCII).
    public static func matches(_ name: String) -> Bool {
        var folded: [UInt8] = []
        folded.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case 0x61...0x7A, 0x30...0x39: folded.append(byte)
            case 0x41...0x5A: folded.append(byte | 0x20)
            case 0x80...: return matchesUnicode(name)
            default: continue
            }
        }
        return matches(folded: folded)
    }

    private static func matchesUnicode(_ name: String) -> Bool {
        matches(
            folded: name.lowercased().unicodeScalars.compactMap { c in
                (c >= "a" && c <= "z") || (c >= "0" && c <= "9") ? UInt8(c.value) : nil
            })
    }

    private static func matches(folded: [UInt8]) -> Bool {
        if names.contains(folded) { return true }
        return parts.contains { part in
            folded.count >= part.count
                && (0...(folded.count - part.count)).contains { start in
                    folded[start..<(start + part.count)].elementsEqual(part)
                }
        }
    }
}
