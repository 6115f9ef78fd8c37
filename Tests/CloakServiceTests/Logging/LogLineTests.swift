import CloakTesting
import Foundation
import Logging
import Testing

@testable import CloakService

/// The fixed-shape lines written on every request (``LogLine``): the same bytes the diagnostic
/// handler writes for the same fields, and values escaped as JSON.
@Suite struct LogLineTests {
    /// Everything after `"ts":"…",`, which differs between two lines by the clock.
    private func afterTimestamp(_ line: String) throws -> String {
        let ts = try #require(
            line.range(of: #"^\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","#, options: .regularExpression))
        return String(line[ts.upperBound...])
    }

    @Test func aLineIsWhatTheDiagnosticHandlerWritesForTheSameFields() throws {
        let fixed = LogCapture()
        var line = LogLine("egress")
        line.field("duration_us", 1234)
        line.field("redacted", 0)
        line.field("revealed", 2)
        line.field("route", "bench")
        line.field("status", 200)
        line.field("token_id", "backend")
        line.field("upstream_status", "-")
        line.write(to: fixed.sink)

        let diagnostic = LogCapture()
        let logger = Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: diagnostic.sink) }
        logger.info(
            "egress",
            metadata: [
                "route": .string("bench"), "token_id": .string("backend"), "revealed": .stringConvertible(2),
                "redacted": .stringConvertible(0), "upstream_status": .string("-"), "status": .stringConvertible(200),
                "duration_us": .stringConvertible(1234),
            ])
        let a = try #require(fixed.lines.first), b = try #require(diagnostic.lines.first)
        #expect(try afterTimestamp(a) == afterTimestamp(b))
        #expect(
            try afterTimestamp(a)
                == #""level":"info","msg":"egress","duration_us":1234,"redacted":0,"revealed":2,"route":"bench","#
                + #""status":200,"token_id":"backend","upstream_status":"-"}"#)
    }

    @Test(arguments: ["a\"b", "back\\slash", "new\nline", "nul\u{0}byte", "tab\t", "ünïcødé", ""])
    func aValueIsEscaped(value: String) throws {
        let capture = LogCapture()
        var line = LogLine("request", level: "warning")
        line.field("route", value)
        line.field("status", -1)
        line.write(to: capture.sink)
        let text = try #require(capture.lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["route"] as? String == value)
        #expect(object["status"] as? Int == -1)
        #expect(object["level"] as? String == "warning")
        #expect(!text.contains("\n"))
    }
}
