import CloakCore
import Foundation
import Logging

/// What every handler may use: the configuration, the logger and the clock.
struct ServiceContext: Sendable {
    let configuration: ServiceConfiguration
    let logger: Logger
    /// Today's date for the expiry window, in the server's local time zone.
    let today: @Sendable () -> CalendarDate

    static let systemToday: @Sendable () -> CalendarDate = {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        return CalendarDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))!
    }
}
