import CloakCore
import CloakHTTP
import Testing
import Tracing

@testable import CloakService

/// W3C Trace Context as ``TraceContext`` reads and writes it, and ``CloakTracer``'s ids,
/// parents and parent-based sampling: tables, no I/O.
struct TraceContextTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let span = "00f067aa0ba902b7"

    @Test(arguments: [
        // (traceparent, valid, sampled)
        ("00-\(trace)-\(span)-01", true, true),
        ("00-\(trace)-\(span)-00", true, false),
        ("00-\(trace)-\(span)-03", true, true),  // unknown flags: only "sampled" is read
        ("01-\(trace)-\(span)-01-more", true, true),  // a later version: extra fields ignored
        ("01-\(trace)-\(span)-01", true, true),
        ("00-\(trace)-\(span)-01-more", false, false),  // version 00 is exactly 55 characters
        ("01-\(trace)-\(span)-01more", false, false),  // an extra field starts with "-"
        ("ff-\(trace)-\(span)-01", false, false),  // version ff is invalid
        ("00-\(trace.uppercased())-\(span)-01", false, false),  // lowercase hex only
        ("00-00000000000000000000000000000000-\(span)-01", false, false),  // all-zero trace id
        ("00-\(trace)-0000000000000000-01", false, false),  // all-zero span id
        ("00-\(trace)-\(span)-0g", false, false),
        ("00-\(trace)-\(span)-1", false, false),
        ("00-\(trace.dropLast())-\(span)-01", false, false),
        ("00_\(trace)_\(span)_01", false, false),
        ("", false, false),
        ("00", false, false),
        ("00-\(trace)-\(span)-01\r\nX-Evil: 1", false, false),
        ("00-4bf92f3577b34da6a3ce929d0e0e473é-\(span)-01", false, false),  // multi-byte: not hex
        (" 00-\(trace)-\(span)-01", false, false),
    ])
    func traceparentIsReadAsTheSpecSays(text: String, valid: Bool, sampled: Bool) {
        let context = TraceContext(traceparent: text)
        #expect((context != nil) == valid)
        if let context {
            #expect(context.traceID.hex == Self.trace && context.spanID.hex == Self.span)
            #expect(context.sampled == sampled)
            #expect(context.traceparent == "00-\(Self.trace)-\(Self.span)-\(sampled ? "01" : "00")")
        }
    }

    @Test(arguments: [
        ("vendor=abc", true),
        ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true),
        (" rojo=1 , congo=2 ", true),
        ("tenant@vendor=x", true),
        ("a-b_c*d/e=v", true),
        ("rojo=1,,congo=2", true),  // empty members are allowed
        ("", false),
        ("Vendor=abc", false),  // keys are lowercase
        ("vendor", false),
        ("vendor=", false),
        ("vendor=a=b", false),
        ("vendor=abc\r\nX-Evil: 1", false),
        ("vendor=abc\u{7f}", false),
        ("vendor@=x", false),
        ("a@b@c=x", false),
        ("vendor=é", false),
        ("1vendor=x", false),  // a simple key starts with a letter
        ("1tenant@system=x", true),  // a tenant may start with a digit
        ("tenant@1system=x", false),
        ("tenant@systemsystemsys=x", false),  // a system is 14 characters at most
        ("rojo=1,rojo=2", false),  // no key twice
        (Array(repeating: "k=v", count: 33).joined(separator: ","), false),  // 32 members at most
        ("k=" + String(repeating: "v", count: 511), false),  // 512 characters at most
    ])
    func tracestateIsKeptOnlyWhenItIsAValidList(text: String, valid: Bool) {
        #expect(TraceContext.isValidTraceState(text) == valid)
        let context = TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-01", tracestate: text)
        #expect(context?.traceState == (valid ? text : nil), "an invalid tracestate drops only itself")
    }

    @Test func everyTracestateFieldIsReadAsOneList() {
        let request = HTTPRequest(
            method: .GET, path: "/",
            headers: [
                ("traceparent", "00-\(Self.trace)-\(Self.span)-01"), ("tracestate", "rojo=1"),
                ("TraceState", "congo=2"),
            ])
        #expect(RequestHeaderExtractor().extract(key: "tracestate", from: request) == "rojo=1,congo=2")
        #expect(
            RequestHeaderExtractor().extract(key: "traceparent", from: request) == "00-\(Self.trace)-\(Self.span)-01")
        #expect(RequestHeaderExtractor().extract(key: "tracestate", from: HTTPRequest(method: .GET, path: "/")) == nil)
    }

    @Test func hexRoundTripsEveryNibble() {
        for value: UInt64 in [0, 1, 0xf, 0x0123_4567_89ab_cdef, .max] {
            let hex = Hex.digits(value)
            #expect(hex.count == 16 && Hex.value(Array(hex.utf8)[...]) == value)
        }
    }

    final class Collected: SpanSink, @unchecked Sendable {
        var spans: [FinishedSpan] = []
        func add(_ span: FinishedSpan) { spans.append(span) }
    }

    @Test func childrenShareTheTraceAndNameTheirParent() {
        let sink = Collected()
        let tracer = CloakTracer(sink: sink)
        let root = tracer.startSpan("root", context: InstrumentationContext.topLevel, ofKind: .server)
        let child = tracer.startSpan("child", context: root.context, ofKind: .client)
        child.attributes["n"] = 1
        child.set("n", 2)
        child.set("m", "x")
        child.end()
        root.end()
        root.end()  // a second end sends nothing
        #expect(sink.spans.map(\.name) == ["child", "root"])
        let (c, r) = (sink.spans[0], sink.spans[1])
        #expect(c.context.traceID == r.context.traceID && c.parentSpanID == r.context.spanID)
        #expect(r.parentSpanID == nil && r.kind == .server && c.kind == .client)
        #expect(c.context.spanID != r.context.spanID && c.context.traceID.isValid)
        #expect(c.attributes.first { $0.key == "n" }?.value == .int64(2))
        #expect(c.attributes.map(\.key) == ["n", "m"], "a key set again keeps its place")
        #expect(r.endNanoseconds >= r.startNanoseconds)
    }

    @Test func aCallersUnsampledTraceIsPassedOnAndNeverRecorded() {
        let sink = Collected()
        let tracer = CloakTracer(sink: sink)
        var parent = InstrumentationContext.topLevel
        tracer.extract(
            ["traceparent": "00-\(Self.trace)-\(Self.span)-00", "tracestate": "vendor=abc"], into: &parent,
            using: DictionaryExtractor())
        let span = tracer.startSpan("request", context: parent, ofKind: .server)
        #expect(!span.isRecording)
        span.attributes["x"] = "y"
        span.end()
        #expect(sink.spans.isEmpty)
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: DictionaryInjector())
        let sent = TraceContext(traceparent: headers["traceparent"] ?? "")
        #expect(sent?.traceID.hex == Self.trace && sent?.spanID.hex != Self.span && sent?.sampled == false)
        #expect(headers["tracestate"] == "vendor=abc")
    }

    @Test func aCallersSampledTraceIsContinuedUnderItsSpan() {
        let sink = Collected()
        let tracer = CloakTracer(sink: sink)
        var parent = InstrumentationContext.topLevel
        tracer.extract(["traceparent": "00-\(Self.trace)-\(Self.span)-01"], into: &parent, using: DictionaryExtractor())
        tracer.startSpan("request", context: parent, ofKind: .server).end()
        #expect(sink.spans.first?.context.traceID.hex == Self.trace)
        #expect(sink.spans.first?.parentSpanID?.hex == Self.span)
    }

    /// A request span is named by its method and route template; an endpoint's own name only
    /// when the request has the endpoint's method (HEAD is served by a GET endpoint).
    @Test(arguments: [
        (HTTPMethod.GET, "/healthz", "GET /healthz"), (.HEAD, "/healthz", "HEAD /healthz"),
        (.PATCH, "/aliases", "PATCH /aliases"), (.POST, "/nowhere", "POST -"),
    ])
    func theRequestSpanIsNamedByItsMethodAndTemplate(method: HTTPMethod, path: String, name: String) throws {
        let sink = Collected()
        let step = TracingMiddleware(tracer: CloakTracer(sink: sink), sampleRatio: 1)
        var context = MiddlewareFixture.admitted(method, path)
        _ = try step.request(&context)
        var response = HTTPResponse(status: 200)
        step.response(&response, context)
        #expect(sink.spans.map(\.name) == [name])
    }

    @Test func anInvalidTraceparentStartsNothing() {
        var parent = InstrumentationContext.topLevel
        CloakTracer(sink: Collected()).extract(
            ["traceparent": "00-\(Self.trace)-\(Self.span)-0x"], into: &parent, using: DictionaryExtractor())
        #expect(parent[TraceContextKey.self] == nil)
    }

    @Test func errorsAreRecordedByTypeOnlyAndEventsAndLinksAreBounded() {
        struct Leaky: Error, CustomStringConvertible { var description: String { "4111111111111111" } }
        let sink = Collected()
        let tracer = CloakTracer(sink: sink)
        let other = tracer.startSpan("other", context: InstrumentationContext.topLevel, ofKind: .internal)
        let span = tracer.startSpan("s", context: InstrumentationContext.topLevel, ofKind: .internal)
        span.recordError(Leaky())
        for _ in 0..<(RecordedSpan.maxEvents + 5) { span.addEvent("e") }
        for _ in 0..<(RecordedSpan.maxLinks + 5) { span.addLink(other) }
        for i in 0..<(RecordedSpan.maxAttributes + 2) { span.set("a\(i)", i) }
        span.setStatus(SpanStatus(code: .ok))
        span.setStatus(SpanStatus(code: .error))
        span.end()
        let finished = sink.spans[0]
        #expect(finished.events.count == RecordedSpan.maxEvents && finished.links.count == RecordedSpan.maxLinks)
        #expect(finished.droppedEvents == 5 + 1 && finished.droppedLinks == 5, "the error's event was dropped first")
        #expect(finished.attributes.count == RecordedSpan.maxAttributes && finished.droppedAttributes == 2)
        #expect(finished.events[0].attributes.get("exception.type") == .string("Leaky"))
        #expect(!"\(finished)".contains("4111111111111111"))
        #expect(finished.status?.code == .ok, "an ok status is final")
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
