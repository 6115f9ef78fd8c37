import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Requests are counted per loop without a lock; `/metrics` sums every loop's cells.
@Suite(.tags(.sockets)) struct RequestMetricsTests {
    @Test func answersOffTheirLoopAreCountedInTheSharedCells() {
        let metrics = RequestMetrics()
        metrics.record(route: "/a", status: 200, nanoseconds: 50_000, loop: nil)  // ≤ 100 µs
        metrics.record(route: "/a", status: 200, nanoseconds: 3_000_000, loop: nil)  // ≤ 5 ms
        metrics.record(route: "/a", status: 404, nanoseconds: 20_000_000_000, loop: nil)  // > 10 s
        let text = metrics.exposition()
        #expect(text.contains(#"cloak_requests_total{route="/a",status="200"} 2"#), "\(text)")
        #expect(text.contains(#"cloak_requests_total{route="/a",status="404"} 1"#))
        // The histogram is per route, cumulative, and ends with +Inf at the count.
        #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/a",le="0.0001"} 1"#))
        #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/a",le="0.0025"} 1"#))
        #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/a",le="0.005"} 2"#))
        #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/a",le="10.0"} 2"#))
        #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/a",le="+Inf"} 3"#))
        #expect(text.contains(#"cloak_request_duration_seconds_count{route="/a"} 3"#))
        #expect(text.contains(#"cloak_request_duration_seconds_sum{route="/a"} 20.00305"#))
        #expect(text.contains("# TYPE cloak_request_duration_seconds histogram"))
    }

    @Test func labelValuesAreEscaped() {
        #expect(RequestMetrics.label(#"a"b\c"# + "\n") == #"a\"b\\c\n"#)
    }

    @Test func everyLoopsAnswersAreSummed() throws {
        try withTestServer(TestServer(threads: 2)) { server throws in
            // Separate connections spread over both loops (SO_REUSEPORT).
            let connections = 8, each = 5
            for _ in 0..<connections {
                let client = try server.client()
                for _ in 0..<each { #expect(try client.request("GET", "/healthz").status == 200) }
            }
            let text = try server.client().request("GET", "/metrics").text
            let total = connections * each
            #expect(text.contains(#"cloak_requests_total{route="/healthz",status="200"} \#(total)"#), "\(text)")
            #expect(text.contains(#"cloak_request_duration_seconds_count{route="/healthz"} \#(total)"#))
            #expect(text.contains(#"cloak_request_duration_seconds_bucket{route="/healthz",le="+Inf"} \#(total)"#))
        }
    }
}
