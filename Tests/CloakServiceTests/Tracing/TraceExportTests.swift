import CloakHTTP
import CloakTesting
import Foundation
import Logging
import Synchronization
import Testing
import Tracing

@testable import CloakService

/// ``TraceExport`` against a collector in Python: batches, the OTLP headers variable, retries
/// and drops by the answer, a collector that is down (bounded memory, export resumes when it is
/// back), TLS with a client certificate, and a collector that cannot be verified.
@Suite(.serialized, .tags(.racy)) struct TraceExportTests {
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        var text: String { lines.withLock { $0.joined(separator: "\n") } }
        var logger: Logger {
            Logger(label: "cloak") { label in
                JSONLogHandler(label: label) { [self] bytes in
                    let line = String(decoding: bytes, as: UTF8.self)
                    lines.withLock { $0.append(line) }
                }
            }
        }
    }

    static func settings(_ endpoint: String) -> ServiceConfiguration.TraceSettings {
        ServiceConfiguration.TraceSettings(endpoint: endpoint, sampleRatio: 1)
    }

    /// Ends `count` spans, each a root with one attribute.
    static func spans(_ count: Int, on export: TraceExport, name: String = "span") {
        for i in 0..<count {
            let span = export.tracer.startSpan(name, context: InstrumentationContext.topLevel, ofKind: .server)
            span.attributes["n"] = i
            span.end()
        }
    }

    static func exported(_ collector: OTLPCollector) -> [OTLPDecoding.Span] {
        collector.received.flatMap { OTLPDecoding.exportRequest($0.body) }
    }

    @Test func spansLeaveInBatchesWithTheCollectorsHeadersAndStopSendsTheRest() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = try OTLPCollector(directory: directory.path)
        defer { collector.stop() }
        let lines = Lines()
        let export = try TraceExport(
            Self.settings("http://127.0.0.1:\(collector.port)/otlp/"), logger: lines.logger,
            environment: ["OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-collector-key = s3cr%3Dt , x-tenant=eu"])
        Self.spans(600, on: export)
        #expect(Poll.until { Self.exported(collector).count >= 512 }, "a full batch leaves without waiting")
        export.stop()
        let received = collector.received
        let spans = Self.exported(collector)
        #expect(spans.count == 600 && Set(spans.map(\.spanID)).count == 600, "every span once")
        #expect(received.allSatisfy { OTLPDecoding.exportRequest($0.body).count <= TraceExport.maxBatchSpans })
        for request in received {
            #expect(request.path == "/otlp/v1/traces")
            #expect(request.header("Content-Type") == "application/x-protobuf")
            #expect(request.header("x-collector-key") == "s3cr=t" && request.header("x-tenant") == "eu")
        }
        #expect(export.counters.exported == 600 && export.counters.droppedQueueFull == 0)
        #expect(!lines.text.contains("s3cr"))
    }

    @Test(arguments: [
        "x-key", "x-key=a\u{01}b", "host=evil", "bad name=1", "x=%0d%0aInjected: 1", "expect=100-continue",
        "proxy-authorization=x", "x=caf%C3%A9",
    ])
    func aHeadersVariableCloakCannotSendRefusesToStartAndIsNotEchoed(value: String) {
        #expect(throws: TraceExportError.self) {
            _ = try TraceExport(
                Self.settings("http://127.0.0.1:9"), logger: Lines().logger,
                environment: ["OTEL_EXPORTER_OTLP_HEADERS": value])
        }
        #expect(!TraceExportError.headers("OTEL_EXPORTER_OTLP_HEADERS").description.contains(value))
    }

    @Test(arguments: ["deployment.environment", "a=1,,b", "k=%zz", "k=v\u{01}"])
    func resourceAttributesThatAreNoListRefuseToStart(value: String) {
        #expect(throws: TraceExportError.self) {
            _ = try TraceExport(
                Self.settings("http://127.0.0.1:9"), logger: Lines().logger,
                environment: ["OTEL_RESOURCE_ATTRIBUTES": value])
        }
    }

    @Test func aRefusalWorthRetryingIsRetriedUntilTheCollectorTakesTheBatch() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = try OTLPCollector(plan: ["503:0", "429:0", "200"], directory: directory.path)
        defer { collector.stop() }
        let lines = Lines()
        let export = try TraceExport(Self.settings("http://127.0.0.1:\(collector.port)"), logger: lines.logger)
        Self.spans(3, on: export)
        #expect(Poll.until { export.counters.exported == 3 })
        export.stop()
        #expect(collector.received.count == 3, "two refusals, then the same batch again")
        #expect(export.counters.failedExports == 2 && export.counters.droppedExportFailed == 0)
        #expect(lines.text.contains("trace export failing") && lines.text.contains("trace export resumed"))
    }

    @Test func aStopDoesNotWaitOutAPauseBeyondItsDeadline() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = try OTLPCollector(plan: ["503:15"], directory: directory.path)
        defer { collector.stop() }
        let export = try TraceExport(
            Self.settings("http://127.0.0.1:\(collector.port)/v1/traces"), logger: Lines().logger,
            environment: ["OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod"])
        Self.spans(4, on: export)
        #expect(Poll.until { export.counters.failedExports == 1 })
        export.stop(seconds: 2)
        #expect(Poll.until { export.counters.droppedExportFailed == 4 }, "dropped, not sent again in a hurry")
        let received = collector.received
        #expect(received.count == 1 && received.first?.path == "/v1/traces", "a traces URL is taken as is")
        #expect(received.first.map { $0.body.firstRange(of: Array("deployment.environment".utf8)) != nil } == true)
    }

    @Test func aPartialSuccessCountsTheRejectedSpansAndSendsNothingAgain() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = try OTLPCollector(plan: ["200+rejected:3"], directory: directory.path)
        defer { collector.stop() }
        let lines = Lines()
        let export = try TraceExport(Self.settings("http://127.0.0.1:\(collector.port)"), logger: lines.logger)
        Self.spans(5, on: export)
        #expect(Poll.until { export.counters.droppedRejected == 3 })
        export.stop()
        #expect(export.counters.exported == 2 && collector.received.count == 1)
        #expect(lines.text.contains("rejected spans"))
    }

    @Test(
        arguments: [
            ([UInt8](), 0), ([0x0a, 0x02, 0x08, 0x03], 3),
            // With error_message, an unknown field before and after, and a larger count.
            ([0x10, 0x01, 0x0a, 0x07, 0x08, 0xac, 0x02, 0x12, 0x02, 0x6f, 0x6b, 0x18, 0x05], 300),
            // Malformed: a length past the end, a varint that never ends, a group.
            ([0x0a, 0x09, 0x08, 0x03], 0), ([0x0a, 0x02, 0x08, 0xff], 0), ([0x0b, 0x08, 0x03], 0),
            // rejected_spans absent: nothing rejected.
            ([0x0a, 0x02, 0x12, 0x00], 0),
        ] as [([UInt8], Int)])
    func theRejectedCountIsReadFromTheAnswer(body: [UInt8], rejected: Int) {
        #expect(OTLPTraceEncoding.rejectedSpans(body) == rejected)
    }

    @Test func aRefusalNotWorthRetryingDropsTheBatchAndCountsIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = try OTLPCollector(plan: ["400"], directory: directory.path)
        defer { collector.stop() }
        let export = try TraceExport(Self.settings("http://127.0.0.1:\(collector.port)"), logger: Lines().logger)
        Self.spans(5, on: export)
        #expect(Poll.until { export.counters.droppedExportFailed == 5 })
        export.stop()
        #expect(collector.received.count == 1 && export.counters.exported == 0)
    }

    @Test func aCollectorThatIsDownCostsABoundedQueueAndExportResumesWhenItIsBack() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let port = try CloakNode.freePort()
        let lines = Lines()
        let export = try TraceExport(Self.settings("http://127.0.0.1:\(port)"), logger: lines.logger)
        defer { export.stop(seconds: 1) }
        Self.spans(6000, on: export, name: "while down")
        // Held: at most the queue and the batch being tried; the rest is dropped and counted.
        let held = 6000 - export.counters.droppedQueueFull
        #expect(held <= TraceExport.maxQueuedSpans + TraceExport.maxBatchSpans)
        #expect(Poll.until { export.counters.failedExports >= 1 })
        #expect(lines.text.contains("trace export failing"))

        // Back: what was queued leaves (the batch being tried first), then spans ended now.
        let collector = try OTLPCollector(port: port, directory: directory.path)
        defer { collector.stop() }
        #expect(Poll.until(seconds: 30) { !collector.received.isEmpty })
        #expect(Poll.until { export.counters.exported >= TraceExport.maxQueuedSpans })
        Self.spans(10, on: export, name: "when back")
        #expect(Poll.until(seconds: 30) { Self.exported(collector).contains { $0.name == "when back" } })
        #expect(lines.text.contains("trace export resumed"))
        let counts = export.counters
        #expect(counts.exported + counts.droppedQueueFull + counts.droppedExportFailed <= 6010)
    }

    @Test func overTLSTheCollectorIsVerifiedAndSeesTheClientCertificate() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let collector = try OTLPCollector(
            directory: certificates.directory.path, tls: certificates, requireClientCertificate: true)
        defer { collector.stop() }
        var settings = Self.settings("https://localhost:\(collector.port)")
        settings.caFile = certificates.caFile
        settings.clientCertificate = .init(
            certificateChain: certificates.clientCertificate, privateKey: certificates.clientKey)
        let export = try TraceExport(settings, logger: Lines().logger)
        Self.spans(3, on: export)
        export.stop()
        #expect(Self.exported(collector).count == 3)
        #expect(collector.received.first?.clientCertificate?.contains("cloak-egress") == true)
        #expect(export.counters.exported == 3)
    }

    @Test func aCollectorThatCannotBeVerifiedGetsNothing() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let collector = try OTLPCollector(directory: certificates.directory.path, tls: certificates)
        defer { collector.stop() }
        var settings = Self.settings("https://localhost:\(collector.port)")
        settings.caFile = certificates.otherCAFile
        let export = try TraceExport(settings, logger: Lines().logger)
        Self.spans(3, on: export)
        #expect(Poll.until { export.counters.failedExports >= 1 })
        export.stop(seconds: 0.2)
        #expect(collector.received.isEmpty && export.counters.exported == 0)
    }
}
