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
        let c = Calendar(identifier: .gregorian).dateComponents(in: TimeZone.current, from: Date())
        return CalendarDate(year: c.year!, month: c.month!, day: c.day!)!
    }
}
