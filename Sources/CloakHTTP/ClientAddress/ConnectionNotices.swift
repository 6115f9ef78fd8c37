import Synchronization

/// Events about client addresses that an operator should hear of once, not once a request: a
/// PROXY header refused, a trusted proxy's `X-Forwarded-For` that could not be read. Each
/// reason is counted; the first of each reason goes to ``sink`` (the service's log).
/// Process-wide: the counts are what `/metrics` shows, whichever server saw them.
public final class ConnectionNotices: Sendable {
    public static let shared = ConnectionNotices()

    private let state = Mutex<(counts: [String: Int], sink: (@Sendable (String) -> Void)?)>(([:], nil))

    /// Where the first notice of each reason goes.
    public func setSink(_ sink: @escaping @Sendable (String) -> Void) { state.withLock { $0.sink = sink } }

    /// Counts `reason` (a fixed text naming the rule, never a request's bytes).
    public func report(_ reason: String) {
        let first: (@Sendable (String) -> Void)? = state.withLock { s in
            s.counts[reason, default: 0] += 1
            return s.counts[reason] == 1 ? s.sink : nil
        }
        first?(reason)
    }

    /// How often each reason was reported.
    public var counts: [String: Int] { state.withLock { $0.counts } }
}
