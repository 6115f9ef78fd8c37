import CloakCore
import Foundation
import Testing

@testable import CloakService

/// The local date that decides expiry windows, asked of the C library once a second.
@Suite struct SystemTodayTests {
    static func localDate() -> CalendarDate {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        return CalendarDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))!
    }

    @Test func theCachedDateIsTheLocalDate() {
        // The first call may fill the cache, the next ones read it; each is today's local date
        // (asked around the call, so a midnight between the two asks is allowed for).
        for _ in 0..<3 {
            let before = Self.localDate()
            let today = ServiceContext.systemToday()
            let after = Self.localDate()
            #expect(today == before || today == after)
        }
    }

    @Test func packedDatesRoundTrip() {
        for (year, month, day) in [(1, 1, 1), (1970, 1, 1), (2000, 2, 29), (2026, 12, 31), (9999, 12, 31)] {
            let date = CalendarDate(year: year, month: month, day: day)!
            #expect(ServiceContext.unpack(ServiceContext.pack(date)) == date)
            #expect(ServiceContext.pack(date) < 1 << 24)
        }
        #expect(ServiceContext.unpack(0) == nil)  // nothing cached: no date
    }
}
