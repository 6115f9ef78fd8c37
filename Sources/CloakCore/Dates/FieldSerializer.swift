/// Splits a date field's output text into separately named components (SDK serializers).
///
/// When a field has a serializer its own name is not emitted, only the component names, and each
/// component is aliased on its own.
public enum FieldSerializer: Sendable, Equatable {
    /// `VGSExpDateSeparateSerializer`.
    case expDate(monthField: String, yearField: String)
    /// `VGSDateSeparateSerializer`.
    case date(dayField: String, monthField: String, yearField: String)

    /// The component names this serializer emits.
    public var fieldNames: [String] {
        switch self {
        case let .expDate(m, y): return [m, y]
        case let .date(d, m, y): return [d, m, y]
        }
    }

    /// `ExpDateFormatConvertor.serialize`: month and year by position from the digits of the output text.
    public static func serializeExpDate(
        _ content: String, format: ExpDateFormat?, monthField: String, yearField: String
    )
        -> [(key: String, value: String)]
    {
        let d = Array(digits(of: content))
        let fmt = format ?? .shortYear
        let y = fmt.yearCharacters
        let month: ArraySlice<Character>
        let year: ArraySlice<Character>
        if fmt.isYearFirst {
            year = d.prefix(y)
            month = d.dropFirst(y).prefix(2)
        } else {
            month = d.prefix(2)
            year = d.dropFirst(2).prefix(y)
        }
        return [(monthField, String(month)), (yearField, String(year))]
    }

    /// `DateFormatConvertor.serialize`: nothing when the digits do not form a date.
    public static func serializeDate(
        _ content: String, format: DateFormat?, dayField: String, monthField: String, yearField: String
    ) -> [(key: String, value: String)] {
        guard let d = (format ?? .mmddyyyy).date(fromInput: digits(of: content)) else { return [] }
        return [(dayField, pad(d.day, 2)), (monthField, pad(d.month, 2)), (yearField, pad(d.year, 4))]
    }
}
