import Testing

@testable import CloakCore

/// Which configured regexes Cloak Elements' frames may run in JavaScript (docs/elements.md).
@Suite struct BrowserRegexTests {
    @Test func theSDKDefaultsAndEveryBuiltInBrandRunInTheBrowser() {
        for type in FieldType.allCases where !type.defaultRegex.isEmpty {
            #expect(BrowserRegex.isSafe(type.defaultRegex), "\(type)")
        }
        for model in PaymentCardModel.builtIn + [.unknown] {
            #expect(BrowserRegex.isSafe(model.matcher.regex.source), "\(model.brand)")
        }
    }

    @Test(arguments: [
        #"^\d{10}$"#, #"^\d{4,17}$"#, "[()-]", #"\d"#, "[a-zA-Z]", #"^[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4})*$"#, "a|b",
        #"^(?=.*\d)[\w.-]+$"#, #"x{2,}?"#, #"[\^\]\\]"#, "^$", #"\.\-\/"#,
    ])
    func plainSyntaxIsSafe(_ source: String) {
        #expect(BrowserRegex.isSafe(source))
    }

    @Test(arguments: [
        #"^[\p{L} .'-]+$"#,  // Unicode properties: JavaScript needs the u flag and reads them otherwise
        #"\bword\b"#,  // word boundaries
        #"(a)\1"#,  // back-references
        "a++", "a*+", "a{2}+",  // possessive quantifiers: ICU only
        "[[a-z]&&[^aeiou]]", "[a-z&&[^q]]", "[[:alpha:]]",  // set operations and POSIX classes
        "(?i)abc", "(?<=a)b", "(?<name>a)", "(?>a)",  // inline flags, look-behind, named and atomic groups
        #"\Qa.b\E"#, #"\x41"#, #"\u0041"#, #"\N{LATIN SMALL LETTER A}"#, #"\z"#, #"\A"#,
        "é", "a\u{7F}",  // non-ASCII, control characters
        "*a", "a|*", "(", ")", "a]", "a}", "[]a]", "a{,2}", "a{x}",
        // Found by the review: ICU overflows or gives up on lazy groups that can match empty, and
        // repeats empty alternatives otherwise than JavaScript.
        #"(?:\d*?)*?\d"#, "(?:a*)*?a", "(?:|-)*", "a||b", "|a", "a|", "(a|)", "(|a)",
    ])
    func anythingElseAsksTheServer(_ source: String) {
        #expect(!BrowserRegex.isSafe(source))
    }

    @Test func transformsRunInTheBrowserOnlyAsOneAtom() {
        for safe in ["[()-]", #"\s"#, #"\s+"#, "-", "[ .-]+", #"\-"#] {
            #expect(BrowserRegex.isSafeTransform(safe), "\(safe)")
        }
        for unsafe in ["a*", "(?:|-)*", "ab", "[a-z]*", "a|b", #"\d{2}"#, "(x)", "."] {
            #expect(!BrowserRegex.isSafeTransform(unsafe), "\(unsafe)")
        }
    }
}
