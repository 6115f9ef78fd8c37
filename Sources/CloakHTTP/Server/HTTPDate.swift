import CloakCore

/// The `Date` header's value, an IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// Formatting one costs thousands of instructions (`gmtime_r`, `snprintf`); a loop keeps one
/// ``HTTPDate`` and formats again only when the second changes.
package struct HTTPDate {
    /// The second the text was made for, or `nil` before the first answer.
    private(set) var second: Int?
    /// The text (29 bytes).
    private(set) var text: [UInt8] = []

    /// The text for `second` (seconds since 1970, UTC), made again only for a new second.
    mutating func update(to second: Int) {
        guard second != self.second else { return }
        self.second = second
        text = Self.format(second)
    }

    /// The 29 bytes of the IMF-fixdate of `seconds` since 1970 (UTC); years 1970 to 9999.
    package static func format(_ seconds: Int) -> [UInt8] {
        let clamped = min(max(seconds, 0), 253_402_300_799)  // 9999-12-31T23:59:59Z
        let days = clamped / 86_400, secondOfDay = clamped % 86_400
        let (year, month, day) = CalendarDate.civil(daysSince1970: days)
        var out = Array("Thu, 01 Jan 1970 00:00:00 GMT".utf8)  // the shape, written over
        out.replaceSubrange(0..<3, with: weekdays[(days + 4) % 7].utf8)  // 1970-01-01 was a Thursday
        out.replaceSubrange(8..<11, with: months[month - 1].utf8)
        out.withUnsafeMutableBufferPointer { text in
            let at = text.baseAddress!
            ZeroPadded.write(day, width: 2, to: at + 5)
            ZeroPadded.write(year, width: 4, to: at + 12)
            ZeroPadded.write(secondOfDay / 3600, width: 2, to: at + 17)
            ZeroPadded.write(secondOfDay / 60 % 60, width: 2, to: at + 20)
            ZeroPadded.write(secondOfDay % 60, width: 2, to: at + 23)
        }
        return out
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}
