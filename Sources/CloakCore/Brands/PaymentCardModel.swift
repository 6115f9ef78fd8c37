/// Everything the SDK knows about one brand: how to detect it, how long its numbers and CVCs
/// are, whether Luhn applies and how the number is laid out.
public struct PaymentCardModel: Sendable {
    public let brand: CardBrand
    /// The display name (`cardBrandName`), e.g. "American Express".
    public let name: String
    public let matcher: BrandMatcher
    public let cardNumberLengths: [Int]
    public let cvcLengths: [Int]
    /// `false` for brands without a checksum (UnionPay).
    public let luhn: Bool
    public let formatPattern: FormatPattern

    public init(
        brand: CardBrand, name: String, matcher: BrandMatcher, cardNumberLengths: [Int], cvcLengths: [Int] = [3],
        luhn: Bool = true, formatPattern: String
    ) {
        self.brand = brand
        self.name = name
        self.matcher = matcher
        self.cardNumberLengths = cardNumberLengths
        self.cvcLengths = cvcLengths
        self.luhn = luhn
        self.formatPattern = FormatPattern(formatPattern)
    }

    /// The CVC pattern for this brand: `#` repeated for the longest CVC.
    public var cvcFormatPattern: FormatPattern {
        FormatPattern(String(repeating: "#", count: cvcLengths.max() ?? 4))
    }

    /// Whether the number (or a prefix of it) belongs to this brand.
    public func matches(_ number: String) -> Bool { matcher.matches(number) }
}

/// How a brand recognises its numbers: the SDK's regex, whole-string matched.
///
/// Built-in brands carry a native prefix table equivalent to their regex (tests compare them on
/// every prefix up to seven digits); it decides ASCII input, the regex decides the rest.
public struct BrandMatcher: Sendable {
    public let regex: RegexPattern
    let prefixes: BrandPrefixTable?

    public init(regex: RegexPattern) {
        self.regex = regex
        self.prefixes = nil
    }

    init(regex: RegexPattern, prefixes: BrandPrefixTable) {
        self.regex = regex
        self.prefixes = prefixes
    }

    public func matches(_ number: String) -> Bool {
        if let prefixes, let decided = prefixes.matches(number) { return decided }
        return regex.wholeMatch(number)
    }
}
