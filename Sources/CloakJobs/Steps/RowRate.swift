/// `limits.import_rows_per_hour` as a token bucket that holds a second of the rate (at least a
/// batch), and starts with one batch (a node that takes a job over starts with that, not more).
/// A bucket of one batch lost what a stall left unused: a slow commit, a checkpoint, the nice-10
/// thread's sleep overrunning by more than a batch's time (25.6 ms at the default rate). A
/// million rows at the default ten thousand a second took 120 s rather than the rate's 100;
/// a bucket of a second's rows makes a stall up. Over any span, at most a second's rows more
/// than the rate go (so up to twice the rate in the one second after a stall of a second).
///
/// Pure: the time is given (nanoseconds of a monotonic clock), so tests run it on a clock of
/// their own; the runner sleeps what ``take(_:at:)`` answers.
package struct RowRate: Equatable {
    private let perSecond: Double
    private let burst: Double
    private var tokens: Double
    private var last: UInt64

    init(perHour: Int, batch: Int, at now: UInt64) {
        perSecond = Double(perHour) / 3600
        burst = max(Double(batch), perSecond.rounded(.down))
        tokens = Double(batch)
        last = now
    }

    /// Takes `count` rows at `now`: nil when they may go (and are taken), else the seconds to
    /// wait before asking again (at most a tenth, so a stop is seen soon).
    mutating func take(_ count: Int, at now: UInt64) -> Double? {
        tokens = min(burst, tokens + Double(now &- last) / 1e9 * perSecond)
        last = now
        if tokens >= Double(count) {
            tokens -= Double(count)
            return nil
        }
        return min(0.1, (Double(count) - tokens) / perSecond)
    }
}
