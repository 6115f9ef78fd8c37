import CloakCore
import Glibc

extension UTCTimestamp {
    /// The realtime clock: seconds since the epoch and the millisecond within the second.
    static func now() -> (seconds: Int, milliseconds: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (Int(ts.tv_sec), Int(ts.tv_nsec) / 1_000_000)
    }
}
