import Testing

@testable import CloakCore

/// The native matchers (brand prefix tables, hand-written field-regex matchers) must answer
/// exactly as ICU does with the SDK's whole-string (`NSPredicate MATCHES`) semantics.
@Suite struct NativeMatcherEquivalenceTests {
    // MARK: corpora

    static let digits: [Character] = Array("0123456789")

    /// Every digit string of length 1...5.
    static let allShortDigitStrings: [String] = allStrings(over: digits, upTo: 5, includeEmpty: false)

    /// Six- and seven-digit strings around every brand prefix of the reference table.
    static let brandNeighbourhoods: [String] = {
        let three = [
            "401", "431", "438", "451", "457", "504", "506", "509", "627", "636", "650", "651", "655", "417", "639",
            "384", "606", "637", "222", "223", "229", "230", "272", "555", "510", "601", "300", "305", "309", "213",
            "180", "670", "402", "440", "450", "484", "491", "501", "502", "503", "630", "600", "622", "644", "352",
        ]
        let four = ["6500", "6504", "6505", "6509", "4175", "6390", "5067", "2720", "2221", "2710", "6011", "3841"]
        let three3 = allStrings(over: digits, upTo: 3, includeEmpty: false).filter { $0.count == 3 }
        let four3 = three3
        var out: [String] = []
        for p in three { for s in three3 { out.append(p + s) } }
        for p in four { for s in four3 { out.append(p + s) } }
        return out
    }()

    /// 20,000 random digit strings of 6 to 19 digits, fixed seed.
    static let randomLongDigitStrings: [String] = {
        var rng = SeededGenerator(seed: 20_261_122)
        return (0..<20_000).map { _ in
            let n = Int.random(in: 6...19, using: &rng)
            return String((0..<n).map { _ in digits.randomElement(using: &rng)! })
        }
    }()

    static let nonDigitSuffixes: [String] = ["a", " ", "\n", "/", "é", "\u{0}", "٤", "-", "４"]

    /// Inputs that are not all ASCII digits.
    static let brandNonDigitInputs: [String] = {
        var out = [
            "", "4a", "65003a1", " 4", "4 ", "4\n", "\n4", "65003\n", "65003\n1", "4011789", "401178a", "a401178",
            "٤", "4٤", "６", "60\u{0}", "6011a", "60a", "3a", "2720ab", "-4", "+4", "4.0", "４", "4111 1111 1111 1111",
            "650034a", "650031a", "6500311a", "65003é", "65003\u{301}", "4\u{301}", "6\r\n", "4\r\n",
        ]
        for p in allStrings(over: digits, upTo: 3, includeEmpty: false) {
            for s in nonDigitSuffixes { out.append(p + s) }
            out.append("x" + p)
        }
        for p in [
            "65003", "65004", "65005", "65040", "65048", "65053", "65097", "41750", "63900", "67000", "22210", "27200",
        ] {
            for s in nonDigitSuffixes + ["4", "44"] {
                out.append(p + s)
                out.append(p + s + "1")
            }
        }
        return out
    }()

    static let brandCorpus: [String] =
        allShortDigitStrings + brandNeighbourhoods + randomLongDigitStrings + brandNonDigitInputs

    // MARK: brands

    @Test func corpusCoversEveryShortDigitString() {
        #expect(Self.allShortDigitStrings.count == 111_110)
        #expect(Set(Self.allShortDigitStrings).count == 111_110)
        #expect(Self.randomLongDigitStrings.count == 20_000)
        #expect(Self.allShortDigitStrings.prefix(11_110).allSatisfy { $0.count <= 4 })
    }

    @Test(arguments: PaymentCardModel.builtIn.map(\.brand))
    func brandPrefixTableAgreesWithICU(brand: CardBrand) {
        let model = builtInModel(brand)
        #expect(model.matcher.prefixes != nil, "built-in brands carry a native table")
        var mismatches: [String] = []
        for s in Self.brandCorpus {
            let native = model.matcher.matches(s)
            let icu = model.matcher.regex.icuWholeMatch(s)
            if native != icu, mismatches.count < 10 {
                mismatches.append("\(s.debugDescription): native \(native), ICU \(icu)")
            }
        }
        #expect(mismatches.isEmpty, "\(brand): \(mismatches.joined(separator: "; "))")
    }

    /// Detection (first match in the SDK order, on the byte path) equals "first ICU match".
    @Test func detectionAgreesWithFirstICUMatchInOrder() {
        let neighbours = Self.brandNeighbourhoods.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        let corpus =
            Array(Self.allShortDigitStrings.prefix(11_110)) + neighbours
            + Self.brandNonDigitInputs + Array(Self.randomLongDigitStrings.prefix(2_000))
        var mismatches: [String] = []
        for s in corpus {
            let expected = PaymentCardModel.builtIn.first { $0.matcher.regex.icuWholeMatch(s) }?.brand ?? .unknown
            let detected = CardBrandTable.standard.detect(s).brand
            if detected != expected, mismatches.count < 10 {
                mismatches.append("\(s.debugDescription): detected \(detected), ICU order gives \(expected)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "; "))")
    }

    @Test func unknownModelAgreesWithICU() {
        let unknown = PaymentCardModel.unknown
        for s in Self.brandNonDigitInputs + Array(Self.allShortDigitStrings.prefix(2_000)) {
            #expect(unknown.matcher.matches(s) == unknown.matcher.regex.icuWholeMatch(s), "\(s.debugDescription)")
        }
    }

    // MARK: field regexes

    static let fieldAlphabet: [Character] = Array("0123456789/- aZ.,'\t\n")

    /// Every string over the field alphabet up to four characters.
    static let exhaustiveFieldStrings: [String] = allStrings(over: fieldAlphabet, upTo: 4)

    static let extendedCharacters: [Character] = [
        "a", "Z", ".", ",", "'", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{1C}", "\u{1F}", "\u{85}", "\u{A0}",
        "\u{2028}", "\u{3000}", "٣", "４", "_", "@", "[", "`", "{", "~", "é", "\"", "\\", "\u{0}", "+", "*", "(",
        "\r\n", "e\u{301}",
    ]

    /// 20,000 random strings of 5 to 12 characters, mostly digits and slashes (fixed seed).
    static let randomFieldStrings: [String] = {
        var rng = SeededGenerator(seed: 0xF1E1D)
        return (0..<20_000).map { _ in
            let n = Int.random(in: 5...12, using: &rng)
            return String(
                (0..<n).map { _ -> Character in
                    let r = Int.random(in: 0..<100, using: &rng)
                    switch r {
                    case 0..<60: return digits.randomElement(using: &rng)!
                    case 60..<70: return "/"
                    case 70..<76: return "-"
                    case 76..<82: return " "
                    default: return extendedCharacters.randomElement(using: &rng)!
                    }
                })
        }
    }()

    /// Valid examples of each default regex with every one-character substitution, deletion and insertion.
    static let mutatedExamples: [String] = {
        let seeds = [
            "12/30", "1230", "01/2030", "012030", "12/31/2020", "12312020", "2020/12/31", "20201231", "12/31/20",
            "123-45-6789", "123456789", "123 45 6789", "123\t45\n6789", "000-12-3456", "666-12-3456", "900-12-3456",
            "123-00-6789", "123-45-0000", "Joe Business", "O'Brien-Smith, Jr.", "Jo", "1234",
        ]
        let alphabet = digits + fieldAlphabet + extendedCharacters
        var out: Set<String> = []
        for seed in seeds {
            let chars = Array(seed)
            out.insert(seed)
            for i in 0...chars.count {
                for c in alphabet {
                    var inserted = chars
                    inserted.insert(c, at: i)
                    out.insert(String(inserted))
                    if i < chars.count {
                        var replaced = chars
                        replaced[i] = c
                        out.insert(String(replaced))
                    }
                }
                if i < chars.count {
                    var deleted = chars
                    deleted.remove(at: i)
                    out.insert(String(deleted))
                }
            }
        }
        return out.sorted()
    }()

    static let fieldCorpus: [String] = exhaustiveFieldStrings + randomFieldStrings + mutatedExamples

    /// Every string of at most two ASCII characters, plus single non-ASCII characters.
    static let asciiPairs: [String] = {
        let ascii = (0..<128).map { Character(Unicode.Scalar(UInt8($0))) }
        return allStrings(over: ascii, upTo: 2) + extendedCharacters.map(String.init)
            + (UInt32(0x80)..<0x300).compactMap { Unicode.Scalar($0).map { String(Character($0)) } }
    }()

    static let fieldSources: [String] = [
        FieldType.expDate.defaultRegex, FieldType.date.defaultRegex, FieldType.cardHolderName.defaultRegex,
        FieldType.ssn.defaultRegex, FieldType.cvc.defaultRegex,
    ]

    static let singleCharacterSources: [String] = [#"\d"#, "[0-9]", "[a-zA-Z]", "[A-Za-z]"]

    @Test func everyDefaultFieldRegexHasANativeMatcher() {
        for source in Self.fieldSources + Self.singleCharacterSources {
            #expect(NativePattern(source: source) != nil, "\(source)")
        }
        #expect(Self.fieldAlphabet.count == 20)
        #expect(Self.exhaustiveFieldStrings.count == 1 + 20 + 400 + 8_000 + 160_000)
    }

    @Test(arguments: fieldSources)
    func fieldRegexNativeMatcherAgreesWithICU(source: String) throws {
        let pattern = try RegexPattern(source)
        let native = try #require(NativePattern(source: source))
        var mismatches: [String] = []
        for s in Self.fieldCorpus + Self.asciiPairs {
            let fast = pattern.wholeMatch(s)
            let icu = pattern.icuWholeMatch(s)
            if fast != icu, mismatches.count < 10 {
                mismatches.append("\(s.debugDescription): native \(fast), ICU \(icu)")
            }
            if let decided = native.wholeMatch(s), decided != icu, mismatches.count < 10 {
                mismatches.append("\(s.debugDescription): NativePattern \(decided), ICU \(icu)")
            }
        }
        #expect(mismatches.isEmpty, "\(source): \(mismatches.joined(separator: "; "))")
    }

    @Test(arguments: singleCharacterSources)
    func singleCharacterClassAgreesWithICU(source: String) throws {
        let pattern = try RegexPattern(source)
        var mismatches: [String] = []
        for s in Self.asciiPairs + Array(Self.exhaustiveFieldStrings.prefix(8_421)) {
            let fast = pattern.wholeMatch(s)
            let icu = pattern.icuWholeMatch(s)
            if fast != icu, mismatches.count < 10 {
                mismatches.append("\(s.debugDescription): native \(fast), ICU \(icu)")
            }
        }
        #expect(mismatches.isEmpty, "\(source): \(mismatches.joined(separator: "; "))")
    }

    // MARK: transforms (native character classes)

    static let transformSources: [String] = [
        "[()-]", "[ .-]", "[(-)]", "[-]", "[ ]", "[a-z]", "[0-9]", "[A-Za-z0-9]", "[-a]", "[a-]", "[/]", "[.,']",
        "[:digit:]", "[:alpha:]", "[:space:]", "[a-c-e]", "[|]", "[*+?]", "[{}]", "[#$%]", "[\"]",
    ]

    @Test(arguments: transformSources)
    func transformNativeClassAgreesWithICU(source: String) throws {
        guard let pattern = try? RegexPattern(source) else { return }  // ICU refuses it: nothing to compare
        let inputs =
            Self.asciiPairs.filter { $0.count <= 2 } + Self.mutatedExamples.prefix(3_000)
            + ["(555)123-4567", "a:b:c", "digit 1", "x-y.z", "tab\there", "[brackets]", "é(1)"]
        var mismatches: [String] = []
        for template in ["", "x", "--"] {
            for s in inputs {
                let fast = pattern.replacingMatches(in: s, with: template)
                let icu = pattern.icuReplacingMatches(in: s, with: template)
                if fast != icu, mismatches.count < 10 {
                    mismatches.append(
                        "\(s.debugDescription) → native \(fast.debugDescription), ICU \(icu.debugDescription)")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(source): \(mismatches.joined(separator: "; "))")
    }

    // MARK: whole-string semantics

    @Test(arguments: [
        ("a|ab", "ab", true), ("a|ab", "a", true), ("a|ab", "abc", false), ("ab|a", "ab", true),
        (#"\d*$"#, "12\n", false), (#"\d*$"#, "12", true), (#"\d*$"#, "", true), (#"^\d+$"#, "12\n", false),
        (#"^4\d*$"#, "4\n", false), ("abc", "abcd", false), ("abc", "xabc", false), ("(?i)abc", "ABC", true),
        ("a$", "a\n", false), (#"a\Z"#, "a\n", false), ("a*", "", true), ("(a|b)*c", "ababc", true),
        (#"\d{3}"#, "123\n", false), (#"\d{3}$"#, "123\n", false), (#"[0-9]+"#, "12\n", false),
        (#"^\d{10}$"#, "5551234567", true), (#"\d{3}"#, "١٢٣", true), (#"[0-9]{3}"#, "١٢٣", false),
    ])
    func wholeMatchNeedsTheWholeString(pattern: String, input: String, matches: Bool) throws {
        let regex = try RegexPattern(pattern)
        #expect(regex.wholeMatch(input) == matches)
        #expect(regex.icuWholeMatch(input) == matches)
    }

    @Test func invalidPatternThrowsNamingThePattern() {
        #expect(throws: RegexPattern.CompileError.self) { _ = try RegexPattern("(") }
        do {
            _ = try RegexPattern("[a-")
            Issue.record("compiled")
        } catch {
            #expect(error.pattern == "[a-")
            #expect(error.description.contains("[a-"))
        }
    }

    @Test func containsMatchFindsAnyMatch() throws {
        #expect(try RegexPattern(#"\d"#).containsMatch("ab1c"))
        #expect(!(try RegexPattern(#"\d"#).containsMatch("abc")))
        #expect(try RegexPattern("a|ab").containsMatch("xxabxx"))
    }
}
