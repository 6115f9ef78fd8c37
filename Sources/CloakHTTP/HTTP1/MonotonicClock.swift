/// Nanoseconds of a monotonic clock: the loop's (``LoopClock``), or a test's. Connection state
/// machines take every `now` from one (issue 58), so their deadlines are tested without waiting.
protocol MonotonicClock {
    func now() -> UInt64
}

/// `CLOCK_MONOTONIC`, as the loops read it.
struct LoopClock: MonotonicClock {
    @inline(__always) func now() -> UInt64 { LoopWatchdog.now() }
}
