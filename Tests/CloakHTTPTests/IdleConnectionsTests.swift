import Testing

@testable import CloakHTTP

/// Which idle connection a pool reuses, and which it closes, without sockets or a clock.
struct IdleConnectionsTests {
    @Test func theConnectionIdleLeastIsReused() {
        var idle = IdleConnections<String>(limit: 45)
        idle.put("a", now: 100)
        idle.put("b", now: 101)
        let (taken, expired) = idle.take(now: 102)
        #expect(taken == "b" && expired.isEmpty)
        #expect(idle.entries.map(\.connection) == ["a"])
    }

    @Test func connectionsIdleLongerThanTheLimitAreClosedNotReused() {
        var idle = IdleConnections<String>(limit: 45)
        idle.put("old", now: 0)
        idle.put("older-than-limit", now: 10)
        idle.put("fresh", now: 60)
        let (taken, expired) = idle.take(now: 100)  // idle 100, 90 and 40 seconds
        #expect(taken == "fresh")
        #expect(expired == ["old", "older-than-limit"])
        #expect(idle.isEmpty)
    }

    @Test func atTheLimitAConnectionIsStillReused() {
        var idle = IdleConnections<String>(limit: 45)
        idle.put("a", now: 0)
        #expect(idle.take(now: 45).connection == "a")
        idle.put("b", now: 0)
        let (taken, expired) = idle.take(now: 45.001)
        #expect(taken == nil && expired == ["b"])
    }

    @Test func noConnectionIsNothingToReuse() {
        var idle = IdleConnections<String>()
        let (taken, expired) = idle.take(now: 1e9)
        #expect(taken == nil && expired.isEmpty)
        #expect(idle.limit == IdleConnections<String>.defaultLimit)
    }

    @Test func aConnectionThePeerClosedIsRemovedWhereverItIs() {
        var idle = IdleConnections<String>()
        for (name, at) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] { idle.put(name, now: at) }
        idle.remove { $0 == "b" }
        #expect(idle.entries.map(\.connection) == ["a", "c"])
        #expect(idle.removeAll() == ["a", "c"] && idle.isEmpty)
    }

    /// Review V, item 8: a connection is reused only for the caller it was opened for, so what
    /// an upstream sends behind one caller's answer can never reach another; when the pool is
    /// full of other callers' idle connections, the oldest is closed for a new one.
    @Test func anotherCallersConnectionIsNeverTaken() {
        var idle = IdleConnections<String>(limit: 45)
        idle.put("alice-1", caller: "token alice", now: 1)
        idle.put("bob-1", caller: "address 10.0.0.2", now: 2)
        idle.put("alice-2", caller: "token alice", now: 3)
        #expect(idle.take(now: 4, caller: "token mallory").connection == nil)
        #expect(idle.take(now: 4, caller: "token alice").connection == "alice-2")
        #expect(idle.take(now: 4, caller: "address 10.0.0.2").connection == "bob-1")
        #expect(idle.count == 1 && idle.removeOldest() == "alice-1" && idle.removeOldest() == nil)
        // Expiry still closes every caller's old connections, whoever asks.
        idle.put("old", caller: "token alice", now: 0)
        let (taken, expired) = idle.take(now: 100, caller: "token bob")
        #expect(taken == nil && expired == ["old"] && idle.isEmpty)
    }
}
