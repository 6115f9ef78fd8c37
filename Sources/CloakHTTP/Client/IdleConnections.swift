/// A pool's idle connections, oldest first, each with the time it went idle (seconds on a
/// monotonic clock). A connection idle for longer than ``limit`` is not reused: past a NAT's or
/// a load balancer's idle timeout a connection can be gone without a FIN or reset (a request
/// written on it fails, or waits out its deadline), and an upstream closing it at its own
/// keep-alive limit can cross a request on the wire. Closing first, below the common limits
/// (60 s at cloud load balancers and nginx), keeps a charge off such a connection.
///
/// Each connection keeps the caller it was opened for (``UpstreamRequest/caller``) and is reused
/// only for that caller: bytes an upstream sends behind an answer (a late answer, a stray one)
/// can then reach only whoever the connection already served, never another caller, however
/// the kernel merges segments (review V, item 8: issue 55's arrival stamps made the race rare,
/// not impossible).
///
/// A value type without I/O or clock (the pool passes `now`), tested on its own.
struct IdleConnections<Connection> {
    /// The idle time after which a connection is closed rather than reused.
    static var defaultLimit: Double { 45 }

    let limit: Double
    private(set) var entries: [(connection: Connection, caller: String, since: Double)] = []

    init(limit: Double = Self.defaultLimit) {
        self.limit = limit
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// `connection`, opened for `caller`, went idle at `now`.
    mutating func put(_ connection: Connection, caller: String = "", now: Double) {
        entries.append((connection, caller, now))
    }

    /// The connection of `caller` that went idle last, if it has been idle for at most
    /// ``limit``; every connection idle for longer is removed and returned in `expired`, for the
    /// pool to close. Another caller's connection is never taken.
    mutating func take(now: Double, caller: String = "") -> (connection: Connection?, expired: [Connection]) {
        // Idle since times only grow along the array, so the expired ones are a prefix.
        let fresh = entries.firstIndex { now - $0.since <= limit } ?? entries.endIndex
        let expired = entries[..<fresh].map(\.connection)
        entries.removeFirst(fresh)
        guard let last = entries.lastIndex(where: { $0.caller == caller }) else { return (nil, expired) }
        return (entries.remove(at: last).connection, expired)
    }

    /// Removes and returns the connection idle longest, whoever it served (the pool is full
    /// and another caller needs a connection of its own).
    mutating func removeOldest() -> Connection? {
        entries.isEmpty ? nil : entries.removeFirst().connection
    }

    /// Removes the connections `isGone` picks (one the peer closed while it was idle).
    mutating func remove(where isGone: (Connection) -> Bool) {
        entries.removeAll { isGone($0.connection) }
    }

    /// Removes and returns every connection.
    mutating func removeAll() -> [Connection] {
        defer { entries.removeAll() }
        return entries.map(\.connection)
    }
}
