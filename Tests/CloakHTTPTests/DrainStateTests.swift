import Testing

@testable import CloakHTTP

/// ``DrainState``: when a draining loop may end, as a table, and timeouts that cannot trap.
@Suite struct DrainStateTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aLoopThatIsNotDrainingNeverStops() {
        let drain = DrainState()
        #expect(!drain.isDraining)
        #expect(!drain.mayStop(openConnections: 0, now: 0))
    }

    struct Case: Sendable {
        let connections: Int, inFlight: Int, after: Double, mayStop: Bool
    }

    static let cases: [Case] = [
        Case(connections: 0, inFlight: 0, after: 0, mayStop: true),
        Case(connections: 1, inFlight: 0, after: 0, mayStop: false),
        Case(connections: 0, inFlight: 1, after: 0, mayStop: false),
        Case(connections: 3, inFlight: 2, after: 9.9, mayStop: false),
        // The deadline ends it, whatever is left.
        Case(connections: 3, inFlight: 2, after: 10, mayStop: true),
    ]

    @Test(arguments: cases)
    func aDrainEndsWhenNothingIsLeftOrAtItsDeadline(example: Case) {
        var drain = DrainState()
        for _ in 0..<example.inFlight { drain.dispatched() }
        let began = drain.begin(now: Self.second, timeoutSeconds: 10)
        #expect(began)
        #expect(drain.isDraining)
        let now = Self.second + UInt64(example.after * 1e9)
        #expect(drain.mayStop(openConnections: example.connections, now: now) == example.mayStop)
    }

    @Test func answersBringTheCountBack() {
        var drain = DrainState()
        drain.dispatched()
        drain.dispatched()
        _ = drain.begin(now: 0, timeoutSeconds: 60)
        drain.answered()
        #expect(!drain.mayStop(openConnections: 0, now: 1))
        drain.answered()
        #expect(drain.mayStop(openConnections: 0, now: 1))
    }

    @Test func aSecondBeginKeepsTheFirstDeadline() {
        var drain = DrainState()
        let first = drain.begin(now: 0, timeoutSeconds: 1)
        let second = drain.begin(now: 5 * Self.second, timeoutSeconds: 100)
        #expect(first && !second)
        #expect(drain.deadline == Self.second)
    }

    static let year: UInt64 = 365 * 86_400 * second
    static let timeouts: [(seconds: Double, deadline: UInt64)] = [
        (-5, 0), (.nan, 0), (.infinity, year), (1e300, year), (0.5, second / 2),
    ]

    /// A library caller's timeout never traps the conversion: negative and NaN end at once,
    /// infinity and huge values wait a year at most.
    @Test(arguments: timeouts)
    func anyTimeoutGivesADeadline(timeout: (seconds: Double, deadline: UInt64)) {
        var drain = DrainState()
        _ = drain.begin(now: 0, timeoutSeconds: timeout.seconds)
        #expect(drain.deadline == timeout.deadline)
    }
}
