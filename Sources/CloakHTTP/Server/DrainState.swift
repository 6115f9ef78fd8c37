/// A loop's drain, from the request to stop to the loop's end: pure state the worker feeds with
/// the clock and its counts (tested as a table, without a loop).
///
/// Draining, a loop stops accepting; it ends when no connection is open and no request is with
/// the handler, or at the deadline, whichever comes first.
struct DrainState: Equatable {
    /// Requests handed to the handler and not answered yet.
    private(set) var inFlight = 0
    /// Monotonic nanoseconds by which the loop ends, once draining.
    private(set) var deadline: UInt64?

    var isDraining: Bool { deadline != nil }

    mutating func dispatched() { inFlight += 1 }
    mutating func answered() { inFlight -= 1 }

    /// Starts the drain with `timeout` seconds to go; false when it had started already.
    mutating func begin(now: UInt64, timeoutSeconds: Double) -> Bool {
        guard deadline == nil else { return false }
        // Negative or NaN: at once; past a year (infinity included): a year. The conversion to
        // nanoseconds can then never trap, whatever a library caller configures.
        let seconds = timeoutSeconds.isNaN ? 0 : min(max(timeoutSeconds, 0), 365 * 86_400)
        deadline = now &+ UInt64(seconds * 1e9)
        return true
    }

    /// Whether the loop may end now.
    func mayStop(openConnections: Int, now: UInt64) -> Bool {
        guard let deadline else { return false }
        return (openConnections == 0 && inFlight == 0) || now >= deadline
    }
}
