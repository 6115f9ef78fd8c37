/// Whether a field's name says it holds a card's security code (issue 76): such a value never
/// joins a group and is never imported, whatever its field's type says (a `text` field named
/// `cvv` is refused as a `cvc` field is). Case, `_`, `-`, `.` and spaces are ignored, so
/// `CVV2`, `card_cvc` and `security-code` all are.
public enum SecurityCodeName {
    /// The names, as compared: lower case, letters and digits only.
    static let names: Set<String> = [
        "cvc", "cvv", "cvv2", "cvc2", "csc", "cav2", "securitycode", "cardsecuritycode", "cardcvc",
        "cardcvv", "cardcvv2", "cvn", "cvd",
    ]

    public static func matches(_ name: String) -> Bool {
        let folded = String(String.UnicodeScalarView(name.lowercased().unicodeScalars.filter(isLetterOrDigit)))
        return names.contains(folded)
    }

    private static func isLetterOrDigit(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "0" && c <= "9")
    }
}
