import Testing

@testable import CloakCore

@Suite struct RedactionTests {
    /// Compared with spaces removed: whether a separator next to a number survives is cosmetic.
    @Test(arguments: [
        ("4111111111111111", "[redacted]"),
        ("card 4111 1111 1111 1111 exp", "card [redacted] exp"),
        ("4111-1111-1111-1111", "[redacted]"),
        ("pan=4111111111111111&cvc=123", "pan=[redacted]&cvc=123"),
        ("123-45-6789", "[redacted]"),
        ("123456789", "[redacted]"),
        ("ssn 123 45 6789!", "ssn [redacted]!"),
        ("call 555 123 4567 now", "call [redacted] now"),
        ("a 4111111111111111 b 5555555555554444 c", "a [redacted] b [redacted] c"),
        ("field_4111111111111111", "field_[redacted]"),
        ("٤١١١١١١١١١١١١١١١", "[redacted]"),
        // Defect 12: separators outside ASCII (no-break space from %C2%A0, en dash, ideographic space).
        ("/x/4111\u{00A0}1111\u{00A0}1111\u{00A0}1111", "/x/[redacted]"),
        ("4111\u{2013}1111\u{2013}1111\u{2013}1111", "[redacted]"),
        ("4111\u{3000}1111\u{3000}1111\u{3000}1111 ok", "[redacted] ok"),
    ])
    func digitRunsOfNineOrMoreAreMasked(text: String, scrubbed: String) {
        let out = Redaction.scrub(text)
        #expect(out.filter { $0 != " " } == scrubbed.filter { $0 != " " })
        #expect(!out.contains("4111"))
    }

    @Test(arguments: [
        "12345678", "order 1234 and 5678", "2024-01-01", "12/30", "cvc 123", "1234 5678", "v1.2.3", "",
        "no digits here", "unknown field \"exp\"",
    ])
    func shortNumbersAreKept(text: String) {
        #expect(Redaction.scrub(text) == text)
    }

    @Test func scrubbedTextNeverContainsNineConsecutiveDigits() {
        var rng = SeededGenerator(seed: 0x5C2B)
        let alphabet = Array("0123456789 -./_ab")
        for _ in 0..<2_000 {
            let text = String(
                (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            let out = Redaction.scrub(text)
            let digits = out.filter(\.isNumber)
            var longest = 0
            var run = 0
            for ch in out {
                if ch.isNumber { run += 1; longest = max(longest, run) } else if !" -./_".contains(ch) { run = 0 }
            }
            #expect(longest < 9, "\(text) → \(out)")
            #expect(digits.count <= text.filter(\.isNumber).count)
        }
    }

    @Test func textIsCutToTheLimit() {
        #expect(Redaction.scrub(String(repeating: "a", count: 300)).count == 256)
        #expect(Redaction.scrub("abcdef", limit: 3) == "abc")
    }
}
