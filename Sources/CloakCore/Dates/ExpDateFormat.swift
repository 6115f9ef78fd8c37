/// `VGSCardExpDateFormat`: how a card expiry's month and year are written.
public enum ExpDateFormat: String, Sendable, CaseIterable {
    case shortYear
    case longYear
    case shortYearThenMonth
    case longYearThenMonth

    public var yearCharacters: Int { self == .shortYear || self == .shortYearThenMonth ? 2 : 4 }
    public var monthCharacters: Int { 2 }
    public var isYearFirst: Bool { self == .shortYearThenMonth || self == .longYearThenMonth }

    /// Splits a raw input of exactly `month + year` characters into its two parts.
    func split(_ input: String) -> (month: Substring, year: Substring)? {
        guard input.count == monthCharacters + yearCharacters else { return nil }
        let s = Substring(input)
        return isYearFirst
            ? (s.suffix(monthCharacters), s.prefix(yearCharacters))
            : (s.prefix(monthCharacters), s.suffix(yearCharacters))
    }
}

/// `VGSValidationRuleCardExpirationDate`: a real month, not in the past, at most 20 years ahead.
public struct CardExpirationDateRule: ValidationRule {
    public let format: ExpDateFormat
    public let error: String

    public init(format: ExpDateFormat = .shortYear, error: String = ValidationErrorString.expDate) {
        self.format = format
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        guard let parts = format.split(input), let month = Int(parts.month), let yy = Int(parts.year),
            (1...12).contains(month)
        else { return false }
        let year = format.yearCharacters == 2 ? yy + 2000 : yy
        let today = context.today
        if year < today.year || year > today.year + 20 { return false }
        if year == today.year && month < today.month { return false }
        return true
    }
}

/// `ExpDateFormatConvertor.convert`: rewrites an expiry's output text from one format to another.
///
/// Works by position, as the SDK does: the year is the prefix or suffix of `yearCharacters`, the
/// month the other end's two characters, whatever lies between is the divider. Two-digit years
/// are read as 20yy, the rule the validation uses (the SDK's `DateFormatter` window differs only
/// for years the validation already refuses). Input that does not parse is returned unchanged.
public func convertExpDate(_ text: String, from input: ExpDateFormat, to output: ExpDateFormat) -> String {
    let s = Substring(text)
    guard s.count >= input.yearCharacters + input.monthCharacters else { return text }
    let yearText = input.isYearFirst ? s.prefix(input.yearCharacters) : s.suffix(input.yearCharacters)
    let monthText = input.isYearFirst ? s.suffix(input.monthCharacters) : s.prefix(input.monthCharacters)
    let dividerStart = s.index(s.startIndex, offsetBy: input.isYearFirst ? input.yearCharacters : input.monthCharacters)
    let dividerEnd = s.index(s.endIndex, offsetBy: -(input.isYearFirst ? input.monthCharacters : input.yearCharacters))
    guard dividerStart <= dividerEnd, let yearValue = Int(yearText), yearText.allSatisfy(\.isASCII) else { return text }
    let fullYear = input.yearCharacters == 2 ? 2000 + yearValue : yearValue
    let year = output.yearCharacters == 2 ? pad(fullYear % 100, 2) : pad(fullYear, 4)
    let divider = s[dividerStart..<dividerEnd]
    return output.isYearFirst ? "\(year)\(divider)\(monthText)" : "\(monthText)\(divider)\(year)"
}
