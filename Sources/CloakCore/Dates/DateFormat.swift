/// `VGSDateFormat`: the order of day, month and year in a date field.
public enum DateFormat: String, Sendable, CaseIterable {
    case mmddyyyy
    case ddmmyyyy
    case yyyymmdd

    public var displayFormat: String {
        switch self {
        case .mmddyyyy: return "mm-dd-yyyy"
        case .ddmmyyyy: return "dd-mm-yyyy"
        case .yyyymmdd: return "yyyy-mm-dd"
        }
    }

    public var formatPattern: String { self == .yyyymmdd ? "####-##-##" : "##-##-####" }

    /// `dateFromInput`: exactly 8 characters split by position; nil unless a real Gregorian day.
    public func date(fromInput s: String) -> CalendarDate? {
        let c = Array(s)
        guard c.count == 8 else { return nil }
        func int(_ r: Range<Int>) -> Int? { Int(String(c[r])) }
        let parts: (Int?, Int?, Int?)
        switch self {
        case .mmddyyyy: parts = (int(0..<2), int(2..<4), int(4..<8))
        case .ddmmyyyy: parts = (int(2..<4), int(0..<2), int(4..<8))
        case .yyyymmdd: parts = (int(4..<6), int(6..<8), int(0..<4))
        }
        guard let month = parts.0, let day = parts.1, let year = parts.2 else { return nil }
        return CalendarDate(year: year, month: month, day: day)
    }

    /// `formatDate(date, divider)`: zero-padded, e.g. `05/02/2016` for mmddyyyy with "/".
    public func format(_ d: CalendarDate, divider: String) -> String {
        let y = pad(d.year, 4), m = pad(d.month, 2), dd = pad(d.day, 2)
        switch self {
        case .mmddyyyy: return [m, dd, y].joined(separator: divider)
        case .ddmmyyyy: return [dd, m, y].joined(separator: divider)
        case .yyyymmdd: return [y, m, dd].joined(separator: divider)
        }
    }

    /// `dividerInInput`: the divider when the input has exactly two identical non-digit runs, else "".
    public static func divider(in input: String) -> String {
        var runs: [String] = []
        var current = ""
        for ch in input {
            if ch.isASCII && ch.isNumber {
                if !current.isEmpty { runs.append(current); current = "" }
            } else {
                current.append(ch)
            }
        }
        if !current.isEmpty { runs.append(current) }
        return runs.count == 2 && runs[0] == runs[1] ? runs[0] : ""
    }
}

/// `VGSValidationRuleDateRange`: a real date within the inclusive bounds that are set.
public struct DateRangeRule: ValidationRule {
    public let format: DateFormat
    public let start: CalendarDate?
    public let end: CalendarDate?
    public let error: String

    public init(
        format: DateFormat = .mmddyyyy, start: CalendarDate? = nil, end: CalendarDate? = nil,
        error: String = ValidationErrorString.date
    ) {
        self.format = format
        self.start = start
        self.end = end
        self.error = error
    }

    public func validate(_ input: String, in context: ValidationContext) -> Bool {
        guard let d = format.date(fromInput: input) else { return false }
        if let start, d < start { return false }
        if let end, d > end { return false }
        return true
    }
}

/// `DateFormatConvertor.convert`: re-orders a date's output text; unparseable input is unchanged.
public func convertDate(_ text: String, from input: DateFormat, to output: DateFormat) -> String {
    guard let d = input.date(fromInput: digits(of: text)) else { return text }
    return output.format(d, divider: DateFormat.divider(in: text))
}

/// The ASCII digits of `text`, in order (`String.digits` in the SDK).
func digits(of text: String) -> String {
    String(decoding: text.utf8.filter { $0 >= 48 && $0 <= 57 }, as: UTF8.self)
}
