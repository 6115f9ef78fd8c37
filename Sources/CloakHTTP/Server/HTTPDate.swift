/// The `Date` header's value, an IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// evhttp formats one for every answer (`time`, `gmtime_r`, `snprintf`: about 3,400
/// instructions); a loop keeps one ``HTTPDate`` and formats again only when the second changes.
struct HTTPDate {
    /// The second the text was made for, or `nil` before the first answer.
    private(set) var second: Int?
    /// The text and a terminating NUL, for evhttp.
    private(set) var cString: [CChar] = []

    /// The text for `second` (seconds since 1970, UTC), made again only for a new second.
    mutating func update(to second: Int) {
        guard second != self.second else { return }
        self.second = second
        cString = Self.format(second).map { CChar(bitPattern: $0) } + [0]
    }

    /// The 29 bytes of the IMF-fixdate of `seconds` since 1970 (UTC); years 1970 to 9999.
    static func format(_ seconds: Int) -> [UInt8] {
        let clamped = min(max(seconds, 0), 253_402_300_799)  // 9999-12-31T23:59:59Z
        let days = clamped / 86_400, secondOfDay = clamped % 86_400
        let (year, month, day) = civil(daysSince1970: days)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        out.append(contentsOf: weekdays[(days + 4) % 7].utf8)  // 1970-01-01 was a Thursday
        out.append(contentsOf: ", ".utf8)
        append(day, width: 2, to: &out)
        out.append(0x20)
        out.append(contentsOf: months[month - 1].utf8)
        out.append(0x20)
        append(year, width: 4, to: &out)
        out.append(0x20)
        append(secondOfDay / 3600, width: 2, to: &out)
        out.append(0x3A)
        append(secondOfDay / 60 % 60, width: 2, to: &out)
        out.append(0x3A)
        append(secondOfDay % 60, width: 2, to: &out)
        out.append(contentsOf: " GMT".utf8)
        return out
    }

    /// Year, month (1–12) and day of the proleptic Gregorian calendar for a day count from
    /// 1970-01-01, by 400-year eras of 146,097 days counted from 0000-03-01 (so that the leap
    /// day ends each year).
    static func civil(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468  // days from 0000-03-01 to 1970-01-01
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func append(_ value: Int, width: Int, to out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(truncatingIfNeeded: 0x30 + value / divisor % 10))
            divisor /= 10
        }
    }
}
