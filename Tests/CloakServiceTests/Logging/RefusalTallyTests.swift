import CloakTesting
import Foundation
import Logging
import Testing

@testable import CloakService

/// 401s are audited as counts (issue 59): one event a client address, endpoint and minute,
/// written when the minute is over, the pairs a minute bounded.
@Suite struct RefusalTallyTests {
    private static func tally() -> (RefusalTally, LogCapture) {
        let capture = LogCapture()
        let logger = Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: capture.sink) }
        return (RefusalTally(log: AuditLog(logger: logger)), capture)
    }

    private static func events(_ capture: LogCapture) -> [[String: Any]] {
        capture.lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["action"] as? String == "auth_refused" }
    }

    @Test func aMinutesRefusalsAreOneEventEachWrittenWhenTheMinuteIsOver() {
        let (tally, capture) = Self.tally()
        let minute: Int64 = 29_000_000 * 60_000
        for second in 0..<50 {
            tally.count(address: "203.0.113.5", endpoint: "reveal", now: minute + Int64(second) * 1000)
        }
        tally.count(address: "203.0.113.5", endpoint: "create-aliases", now: minute + 59_000)
        tally.count(address: "198.51.100.1", endpoint: "reveal", now: minute + 59_500)
        #expect(Self.events(capture).isEmpty)
        // The next minute's first refusal writes the last minute's counts.
        tally.count(address: "203.0.113.5", endpoint: "reveal", now: minute + 60_000)
        let written = Self.events(capture)
        #expect(written.count == 3)
        #expect(
            written.map { "\($0["client"]!) \($0["endpoint"]!) \($0["count"]!)" } == [
                "198.51.100.1 reveal 1", "203.0.113.5 create-aliases 1", "203.0.113.5 reveal 50",
            ])
        // The timer's flush, and the stop's, write what is left once.
        tally.flush(before: minute + 60_500)
        #expect(Self.events(capture).count == 3)
        tally.flush(before: minute + 120_000)
        tally.flush(before: minute + 180_000)
        #expect(Self.events(capture).count == 4)
    }

    @Test func manyAddressesAreCountedTogetherPastTheBound() {
        let (tally, capture) = Self.tally()
        let minute: Int64 = 29_000_000 * 60_000
        for n in 0..<(RefusalTally.maxKeys + 500) {
            tally.count(address: "10.\(n / 65536).\(n / 256 % 256).\(n % 256)", endpoint: "reveal", now: minute)
        }
        tally.flush(before: minute + 60_000)
        let written = Self.events(capture)
        #expect(written.count == RefusalTally.maxKeys + 1)
        #expect(written.contains { $0["client"] as? String == "*" && $0["count"] as? String == "500" })
    }
}

extension RefusalTallyTests {
    @Test func anIPv6AddressCountsAsItsSlash64() {
        #expect(RefusalTally.counted("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(RefusalTally.counted("2001:db8:1:2::1") == RefusalTally.counted("2001:db8:1:2:ffff::9"))
        #expect(RefusalTally.counted("203.0.113.5") == "203.0.113.5")
        #expect(RefusalTally.counted("not an address") == "not an address")
    }
}
