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
        guard let (month, yy) = Self.digits(input, format) ?? Self.parts(input, format), (1...12).contains(month)
        else { return false }
        let year = format.yearCharacters == 2 ? yy + 2000 : yy
        let today = context.today
        if year < today.year || year > today.year + 20 { return false }
        if year == today.year && month < today.month { return false }
        return true
    }

    /// Month and year of an input of ASCII digits only, read from its bytes; nil for any other input.
    static func digits(_ input: String, _ format: ExpDateFormat) -> (month: Int, year: Int)? {
        var copy = input
        return copy.withUTF8 { b -> (month: Int, year: Int)? in
            guard b.count == format.monthCharacters + format.yearCharacters, b.allSatisfy(isDigit) else { return nil }
            func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + Int(b[$1] - 48) } }
            let yearRange = format.isYearFirst ? 0..<format.yearCharacters : format.monthCharacters..<b.count
            let monthRange = format.isYearFirst ? format.yearCharacters..<b.count : 0..<format.monthCharacters
            return (number(monthRange), number(yearRange))
        }
    }

    /// Month and year as `Int` reads the input's two parts (signs included): any input.
    static func parts(_ input: String, _ format: ExpDateFormat) -> (month: Int, year: Int)? {
        guard let parts = format.split(input), let month = Int(parts.month), let year = Int(parts.year) else {
            return nil
        }
        return (month, year)
    }
}

/// `ExpDateFormatConvertor.convert`: rewrites an expiry's output text from one format to another.
///
/// Works by position, as the SDK does: the year is the prefix or suffix of `yearCharacters`, the
/// month the other end's two characters, whatever lies between is the divider. Two-digit years
/// are read as 20yy, the rule the validation uses (the SDK's `DateFormatter` window differs only
/// for years the validation already refuses). Input that does not parse is returned unchanged.
public func convertExpDate(_ text: String, from input: ExpDateFormat, to output: ExpDateFormat) -> String {
    convertExpDateASCII(text, from: input, to: output) ?? convertExpDateByCharacter(text, from: input, to: output)
}

/// ``convertExpDate(_:from:to:)`` one character at a time: any text.
func convertExpDateByCharacter(_ text: String, from input: ExpDateFormat, to output: ExpDateFormat) -> String {
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

/// ``convertExpDate(_:from:to:)`` for ASCII text (no CR) whose year is ASCII digits: characters are
/// bytes, the result is written from them. Nil for any other text, which takes the general path.
func convertExpDateASCII(_ text: String, from input: ExpDateFormat, to output: ExpDateFormat) -> String? {
    var copy = text
    return copy.withUTF8 { b -> String? in
        let yearCount = input.yearCharacters
        let monthCount = input.monthCharacters
        guard b.count >= yearCount + monthCount, b.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) else { return nil }
        let yearStart = input.isYearFirst ? 0 : b.count - yearCount
        let monthStart = input.isYearFirst ? b.count - monthCount : 0
        let dividerStart = input.isYearFirst ? yearCount : monthCount
        let dividerEnd = b.count - (input.isYearFirst ? monthCount : yearCount)
        guard b[yearStart..<(yearStart + yearCount)].allSatisfy(isDigit) else { return nil }
        var fullYear = b[yearStart..<(yearStart + yearCount)].reduce(0) { $0 * 10 + Int($1 - 48) }
        if yearCount == 2 { fullYear += 2000 }
        let outYearCount = output.yearCharacters
        let outYear = outYearCount == 2 ? fullYear % 100 : fullYear  // below 10,000: four digits at most
        let dividerCount = dividerEnd - dividerStart
        return String(unsafeUninitializedCapacity: outYearCount + dividerCount + monthCount) { out in
            var at = 0
            func put(_ slice: Slice<UnsafeBufferPointer<UInt8>>) { for c in slice { out[at] = c; at += 1 } }
            func putYear() {
                ZeroPadded.write(outYear, width: outYearCount, to: out.baseAddress! + at)
                at += outYearCount
            }
            if output.isYearFirst { putYear() } else { put(b[monthStart..<(monthStart + monthCount)]) }
            put(b[dividerStart..<dividerEnd])
            if output.isYearFirst { put(b[monthStart..<(monthStart + monthCount)]) } else { putYear() }
            return at
        }
    }
}
