/// Whether a field's name says it holds a card's security code (issue 76): such a value never
/// joins a group and is never imported, whatever its field's type says (a `text` field named
/// `cvv` is refused as a `cvc` field is). Case, `_`, `-`, `.` and spaces are ignored, so
/// `CVV2`, `card_cvc`, `cvc_number`, `cc-cvv` and `security-code` all are.
public enum SecurityCodeName {
    /// Whole names, as compared (lower case, letters and digits only): short ones that are
    /// parts of other words (`csc`, `cvd`…) are taken only whole (not `cid`: a customer id as often).
    static let names: Set<String> = ["csc", "cav2", "cvn", "cvd", "cardcode"]
    /// Parts that name a security code wherever they appear (`cc_cvv`, `cvc_number`, `ccv`).
    static let parts = ["cvv", "cvc", "ccv", "securitycode"]

    public static func matches(_ name: String) -> Bool {
        let folded = String(String.UnicodeScalarView(name.lowercased().unicodeScalars.filter(isLetterOrDigit)))
        return names.contains(folded) || parts.contains { folded.contains($0) }
    }

    private static func isLetterOrDigit(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "0" && c <= "9")
    }
}
