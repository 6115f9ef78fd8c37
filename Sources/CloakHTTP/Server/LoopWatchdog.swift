import Glibc
import Synchronization

/// Whether every event loop is still turning. Each loop's sweep timer beats its ``Heartbeat``
/// four times a second; a loop stuck in a callback (or spinning inside libevent) stops beating.
/// `/readyz` asks ``stalledLoops(now:limit:)`` so that a balancer takes a node with a stuck loop
/// out of rotation even while its other loops, the main listener's included, still answer.
///
/// Shared by every server of a process (the main listener and the egress door). Any thread.
public final class LoopWatchdog: Sendable {
    /// One loop's last turn, in nanoseconds of the monotonic clock (0: not started yet).
    public final class Heartbeat: Sendable {
        public let name: String
        private let last = Atomic<UInt64>(0)

        init(name: String) { self.name = name }

        public func beat(now: UInt64) { last.store(now, ordering: .relaxed) }
        public var lastBeat: UInt64 { last.load(ordering: .relaxed) }
    }

    private let hearts = Mutex<[Heartbeat]>([])

    public init() {}

    /// A heartbeat for a new loop; it counts from `now` (a loop that never turns is stalled too).
    public func register(name: String, now: UInt64) -> Heartbeat {
        let heart = Heartbeat(name: name)
        heart.beat(now: now)
        hearts.withLock { $0.append(heart) }
        return heart
    }

    /// Forgets the loops of a server that shut down.
    public func unregister(_ gone: [Heartbeat]) {
        hearts.withLock { list in list.removeAll { heart in gone.contains { $0 === heart } } }
    }

    /// The names of the loops that have not turned within `limit` nanoseconds of `now`.
    /// Nanoseconds of the monotonic clock the loops beat with (`CLOCK_MONOTONIC`, read through
    /// the vDSO: no lock, no allocation).
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    public func stalledLoops(now: UInt64, limit: UInt64) -> [String] {
        hearts.withLock { list in
            list.filter { now > $0.lastBeat && now - $0.lastBeat > limit }.map(\.name)
        }
    }
}
