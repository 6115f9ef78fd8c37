/// The ways a file of cards writes an expiry, read into the text a form's `expDate` field
/// takes (review V, item 10: the shipped `card_import` form refused `MM/YYYY` row by row).
/// An import reads `MM/YY`, `M/YY`, `MM/YYYY`, `M/YYYY` (with `/`, `-`, `.` or a space between,
/// or none: `MMYY`, `MMYYYY`), `YYYY-MM` (a four-digit year first is never a month), and a month
/// and a year in columns of their own; each is written in the field's input format, as the
/// SDK's conversions would (two-digit years are 20yy). Anything else is left as it was, for the
/// field's own rules to refuse.
public enum ExpiryLayouts {
    /// `text` as the field's input `format` writes it (`MM/YY`, `MM/YYYY`, `YY/MM`, `YYYY/MM`), or
    /// nil when it is none of the layouts above.
    public static func normalize(_ text: String, to format: ExpDateFormat) -> String? {
        let trimmed = text.trimmingSpaces
        var groups: [String] = []
        var current = ""
        for ch in trimmed {
            if ch.isASCII, ch.isNumber {
                current.append(ch)
            } else if "/-. ".contains(ch) {
                guard !current.isEmpty else { return nil }
                groups.append(current)
                current = ""
            } else {
                return nil
            }
        }
        if !current.isEmpty { groups.append(current) }
        let month: Int
        let year: Int
        switch groups.count {
        case 1:
            // MMYY or MMYYYY, digits alone.
            let digits = groups[0]
            guard digits.count == 4 || digits.count == 6, let m = Int(digits.prefix(2)),
                let y = Int(digits.dropFirst(2))
            else { return nil }
            (month, year) = (m, digits.count == 4 ? 2000 + y : y)
        case 2:
            if groups[0].count == 4 {
                // YYYY-MM.
                guard (1...2).contains(groups[1].count), let y = Int(groups[0]), let m = Int(groups[1]) else {
                    return nil
                }
                (month, year) = (m, y)
            } else {
                guard (1...2).contains(groups[0].count), groups[1].count == 2 || groups[1].count == 4,
                    let m = Int(groups[0]), let y = Int(groups[1])
                else { return nil }
                (month, year) = (m, groups[1].count == 2 ? 2000 + y : y)
            }
        default:
            return nil
        }
        return write(month: month, year: year, to: format)
    }

    /// A month and a year from columns of their own (`M` or `MM`; `YY` or `YYYY`).
    public static func combine(month: String, year: String, to format: ExpDateFormat) -> String? {
        let (m, y) = (month.trimmingSpaces, year.trimmingSpaces)
        guard (1...2).contains(m.count), y.count == 2 || y.count == 4, m.allSatisfy({ $0.isASCII && $0.isNumber }),
            y.allSatisfy({ $0.isASCII && $0.isNumber }), let monthValue = Int(m), let yearValue = Int(y)
        else { return nil }
        return write(month: monthValue, year: y.count == 2 ? 2000 + yearValue : yearValue, to: format)
    }

    private static func write(month: Int, year: Int, to format: ExpDateFormat) -> String? {
        guard (1...12).contains(month), (2000...2999).contains(year) else { return nil }
        let mm = month < 10 ? "0\(month)" : "\(month)"
        let yy = format.yearCharacters == 2 ? String(String(year).suffix(2)) : String(year)
        return format.isYearFirst ? "\(yy)/\(mm)" : "\(mm)/\(yy)"
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
