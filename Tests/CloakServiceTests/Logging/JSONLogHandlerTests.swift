import CloakTesting
import Foundation
import Logging
import Testing

@testable import CloakService

/// The diagnostic log's line shape: `ts`, `level`, `msg`, then the metadata in key order, values
/// as JSON (numbers for `Int`s).
@Suite struct JSONLogHandlerTests {
    @Test func aLineIsOneObjectWithItsMetadataInKeyOrder() throws {
        let capture = LogCapture()
        var handler = JSONLogHandler(label: "cloak", sink: capture.sink)
        handler.metadata = ["node": "a", "route": "overridden"]
        let logger = Logger(label: "cloak") { _ in handler }
        logger.info(
            "egress \"quoted\"",
            metadata: [
                "route": .string("bench"), "revealed": .stringConvertible(2), "status": .stringConvertible(200),
                "ratio": .stringConvertible(1.5), "list": .array([.string("x"), .stringConvertible(3)]),
                "map": .dictionary(["b": .string("2"), "a": .string("1")]),
            ])
        let line = try #require(capture.lines.first)
        let ts = try #require(
            line.range(of: #"^\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","#, options: .regularExpression))
        #expect(
            String(line[ts.upperBound...]) == #"""
                "level":"info","msg":"egress \"quoted\"","list":["x",3],"map":{"a":"1","b":"2"},"node":"a","ratio":"1.5",\#
                "revealed":2,"route":"bench","status":200}
                """#)
        #expect((try JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any])
    }
}
