/// Everything the SDK knows about one brand: how to detect it, how long its numbers and CVCs
/// are, whether Luhn applies and how the number is laid out.
///
/// A final class: detection hands the same model around for every field and request, so
/// sharing one instance costs a single retain instead of copying every member.
public final class PaymentCardModel: Sendable {
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
        self.cvcFormatPattern = FormatPattern(String(repeating: "#", count: cvcLengths.max() ?? 4))
    }

    /// The CVC pattern for this brand: `#` repeated for the longest CVC.
    public let cvcFormatPattern: FormatPattern

    /// Whether the number (or a prefix of it) belongs to this brand.
    public func matches(_ number: String) -> Bool { matcher.matches(number) }

    /// The same, for a number already known to be ASCII.
    func matches(ascii bytes: UnsafeBufferPointer<UInt8>, number: String) -> Bool {
        matcher.matches(ascii: bytes, number: number)
    }
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
        var copy = number
        return copy.withUTF8 { bytes in
            bytes.allSatisfy { $0 < 0x80 } ? matches(ascii: bytes, number: number) : regex.wholeMatch(number)
        }
    }

    /// False only when no number starting with `digit` can match (a regex alone cannot tell).
    func admits(firstDigit digit: Int) -> Bool { prefixes?.admits(firstDigit: digit) ?? true }

    func matches(ascii bytes: UnsafeBufferPointer<UInt8>, number: String) -> Bool {
        if let prefixes { return prefixes.matches(ascii: bytes) }
        return regex.wholeMatch(number)
    }
}
