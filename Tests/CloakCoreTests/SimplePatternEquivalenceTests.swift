import Testing

@testable import CloakCore

/// The native matchers for configured regexes (simple atom sequences and character-class
/// transforms) must answer exactly as ICU does.
@Suite struct SimplePatternEquivalenceTests {
    static let patterns = [
        #"^\d{10}$"#, #"^\d{4,17}$"#, #"\d{3}"#, #"^[A-Z]{2}[0-9]+$"#, #"[^0-9]*"#, #"^\d+\-\d?$"#, #"a*a"#,
        #"^[a-c]{2,}x?$"#, #"\(\d{3}\)\d{3}-\d{4}"#, #"[0-9a-fA-F]{1,4}"#, #"9\d*9"#,
    ]

    /// Every string of length 0…4 over a small alphabet, plus some longer ones.
    static let corpus: [String] = {
        let alphabet = Array("019aAxZ-()\n ")
        var out = [""]
        var level = [""]
        for _ in 1...4 {
            level = level.flatMap { prefix in alphabet.map { prefix + String($0) } }
            out += level
        }
        out += [
            "5551234567", "555123456", "55512345678", "AB123", "ab123", "(555)123-4567", "9999", "1234567890\n",
            "aaaa", "abcx", "0123456789abcdef0", String(repeating: "7", count: 17), String(repeating: "7", count: 18),
        ]
        return out
    }()

    @Test(arguments: patterns)
    func simplePatternAgreesWithICU(pattern: String) throws {
        #expect(SimplePattern(source: pattern) != nil, "\(pattern) should be handled natively")
        let regex = try RegexPattern(pattern)
        for input in Self.corpus {
            #expect(regex.wholeMatch(input) == regex.icuWholeMatch(input), "\(pattern) on \(input.debugDescription)")
        }
    }

    @Test(arguments: [#"(a|b)"#, #"a.b"#, #"\s+"#, #"\w"#, #"a+?"#, #"a{2}+"#, #"(?i)abc"#, #"[[:digit:]]"#, #"x|y"#])
    func patternsBeyondTheSubsetGoToICU(pattern: String) {
        #expect(SimplePattern(source: pattern) == nil)
    }

    @Test(arguments: ["[()-]", "[ .-]", "[a-c]", "[-x]"])
    func characterClassTransformAgreesWithICU(pattern: String) throws {
        let regex = try RegexPattern(pattern)
        #expect(NativeCharacterClass(source: pattern) != nil)
        for input in Self.corpus.prefix(3000) + ["(555) 123-4567", "a.b-c d", "ünïcode-(x)"] {
            for template in ["", "_", "--"] {
                #expect(
                    regex.replacingMatches(in: input, with: template)
                        == regex.icuReplacingMatches(in: input, with: template),
                    "\(pattern) on \(input.debugDescription) with \(template.debugDescription)")
            }
        }
    }
}
