import CloakCore
import Foundation
import Logging
import Synchronization

/// What every handler may use: the configuration, the logger and the clock.
///
/// A class: every handler of every request holds it, and copying the configuration it carries
/// (a struct of arrays and dictionaries) would retain each of them per request.
final class ServiceContext: Sendable {
    let configuration: ServiceConfiguration
    let logger: Logger
    /// Where ``logger``'s lines go; a fixed-shape line written per call (``LogLine``, the egress
    /// line) goes there directly.
    let logSink: LogSink
    /// Today's date for the expiry window, in the server's local time zone.
    let today: @Sendable () -> CalendarDate

    init(
        configuration: ServiceConfiguration, logger: Logger, logSink: @escaping LogSink,
        today: @escaping @Sendable () -> CalendarDate
    ) {
        self.configuration = configuration
        self.logger = logger
        self.logSink = logSink
        self.today = today
    }

    /// The system's local date, asked of `localtime_r` once a second at most: it takes the C
    /// library's time-zone lock, and every validate request reads the date.
    static let systemToday: @Sendable () -> CalendarDate = {
        var now = time(nil)
        let cached = todayCache.load(ordering: .relaxed)
        if cached >> 24 == UInt64(truncatingIfNeeded: now), let date = unpack(cached) { return date }
        var parts = tm()
        localtime_r(&now, &parts)
        let date = CalendarDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))!
        todayCache.store(UInt64(truncatingIfNeeded: now) << 24 | pack(date), ordering: .relaxed)
        return date
    }

    /// The second (high 40 bits) and that second's date (low 24), written by any loop: a loop
    /// reads a whole pair, so a date always belongs to its second. Zero: nothing cached yet.
    private static let todayCache = Atomic<UInt64>(0)

    static func pack(_ date: CalendarDate) -> UInt64 {
        UInt64(date.year & 0x3FFF) << 9 | UInt64(date.month) << 5 | UInt64(date.day)
    }

    static func unpack(_ packed: UInt64) -> CalendarDate? {
        CalendarDate(year: Int(packed >> 9 & 0x3FFF), month: Int(packed >> 5 & 0xF), day: Int(packed & 0x1F))
    }
}
