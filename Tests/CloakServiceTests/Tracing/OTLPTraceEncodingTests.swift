import CloakTesting
import Foundation
import Testing
import Tracing

@testable import CloakService

/// Cloak's hand-written OTLP encoding read back by the OpenTelemetry protocol's own generated
/// code (the `opentelemetry-proto` Python package, pinned by `scripts/test-python`): every field
/// lands where the `.proto` files put it, with no field the bindings do not know, and the
/// bindings write the same bytes again.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"] != nil,
        "needs CLOAK_TEST_PYTHON (scripts/test sets it from scripts/test-python)"),
    .tags(.python))
struct OTLPTraceEncodingTests {
    static let script = #"""
        import base64, json, sys
        from google.protobuf import json_format, unknown_fields
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        data = open(sys.argv[1], "rb").read()
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(data)

        unknown = []
        def walk(message, path):
            if len(unknown_fields.UnknownFieldSet(message)):
                unknown.append(path)
            for field, value in message.ListFields():
                if field.message_type is None:
                    continue
                repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
                if repeated:
                    for i, item in enumerate(value):
                        walk(item, "%s.%s[%d]" % (path, field.name, i))
                else:
                    walk(value, path + "." + field.name)
        walk(request, "request")

        print(json.dumps({
            "same_bytes": request.SerializeToString() == data,
            "unknown": unknown,
            "request": json_format.MessageToDict(request, preserving_proto_field_name=True),
        }))
        """#

    static func context(_ trace: UInt64, _ span: UInt64, sampled: Bool = true, state: String? = nil) -> TraceContext {
        TraceContext(
            traceID: TraceID(high: 0x0102_0304_0506_0708, low: trace), spanID: SpanID(value: span), sampled: sampled,
            traceState: state)
    }

    static var spans: [FinishedSpan] {
        let pairs: [(String, SpanAttribute)] = [
            ("s", .string("text")), ("empty", .string("")), ("yes", .bool(true)), ("no", .bool(false)),
            ("zero", .int64(0)), ("negative", .int64(-42)), ("big", .int64(.max)), ("small", .int32(-7)),
            ("half", .double(1.5)), ("nought", .double(0)), ("strings", .stringArray(["a", ""])),
            ("ints", .int64Array([1, 0, -1])), ("flags", .boolArray([true, false])),
            ("doubles", .doubleArray([0, 2.5])),
            ("unicode ✓", .string("naïve")), ("", .string("no key")),
        ]
        let attributes = pairs.map { SpanAttributeEntry(key: $0.0, value: $0.1) }
        var linkedContext = InstrumentationContext.topLevel
        linkedContext[TraceContextKey.self] = context(9, 10, state: "vendor=abc")
        let many = (0..<(OTLPTraceEncoding.maxAttributes + 3)).map {
            SpanAttributeEntry(key: "a\($0)", value: .int64(Int64($0)))
        }
        return [
            FinishedSpan(
                context: context(1, 2, state: "rojo=1"), parentSpanID: SpanID(value: 3), name: "POST /aliases",
                kind: .server, startNanoseconds: 1_700_000_000_000_000_001, endNanoseconds: 1_700_000_000_000_500_000,
                attributes: attributes,
                events: [
                    SpanEvent(
                        name: "exception",
                        at: DefaultTracerClock.Instant(nanosecondsSinceEpoch: 1_700_000_000_000_000_100),
                        attributes: ["exception.type": "Leaky"])
                ],
                links: [SpanLink(context: linkedContext, attributes: ["cloak.link": "call"])],
                status: SpanStatus(code: .error, message: "failed")),
            FinishedSpan(
                context: context(4, 5), parentSpanID: nil, name: "vault batch", kind: .client, startNanoseconds: 10,
                endNanoseconds: 20, attributes: many, events: [], links: [], status: SpanStatus(code: .ok),
                droppedEvents: 2, droppedLinks: 7),
            FinishedSpan(
                context: context(6, 7), parentSpanID: nil, name: "", kind: .internal, startNanoseconds: 0,
                endNanoseconds: 0, attributes: [], events: [], links: [], status: nil),
            FinishedSpan(
                context: context(6, 8), parentSpanID: SpanID(value: 7), name: "p", kind: .producer,
                startNanoseconds: 1, endNanoseconds: 2, attributes: [], events: [], links: [], status: nil),
            FinishedSpan(
                context: context(6, 11), parentSpanID: SpanID(value: 7), name: "c", kind: .consumer,
                startNanoseconds: 1, endNanoseconds: 2, attributes: [], events: [], links: [], status: nil),
        ]
    }

    static func decoded(_ bytes: [UInt8]) throws -> [String: Any] {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = "\(directory.path)/export.bin"
        let script = "\(directory.path)/read.py"
        try Data(bytes).write(to: URL(fileURLWithPath: data))
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"]!)
        process.arguments = [script, data]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "the bindings could not read the export")
        return try #require(JSONSerialization.jsonObject(with: output) as? [String: Any])
    }

    static func hex(_ base64: Any?) -> String {
        guard let text = base64 as? String, let data = Data(base64Encoded: text) else { return "" }
        return data.map { String(format: "%02x", $0) }.joined()
    }

    /// `{"key": k, "value": {"string_value": …}}` lists as a dictionary of each value's object.
    static func values(_ list: Any?) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for item in list as? [[String: Any]] ?? [] {
            out[item["key"] as? String ?? ""] = item["value"] as? [String: Any] ?? [:]
        }
        return out
    }

    @Test func theOfficialBindingsReadEveryFieldWhereTheProtoPutsIt() throws {
        let bytes = OTLPTraceEncoding(
            serviceName: "cloak-eu", attributes: [("deployment.environment", "prod"), ("service.name", "not this")]
        ).exportRequest(Self.spans)
        let result = try Self.decoded(bytes)
        #expect(result["unknown"] as? [String] == [], "fields the bindings do not know")
        #expect(result["same_bytes"] as? Bool == true, "the bindings write other bytes for the same message")

        let request = try #require(result["request"] as? [String: Any])
        let resourceSpans = try #require((request["resource_spans"] as? [[String: Any]])?.first)
        let resource = Self.values((resourceSpans["resource"] as? [String: Any])?["attributes"])
        #expect(resource["service.name"]?["string_value"] as? String == "cloak-eu")
        #expect(resource["telemetry.sdk.name"]?["string_value"] as? String == "cloak")
        #expect(resource["deployment.environment"]?["string_value"] as? String == "prod")
        #expect((resourceSpans["resource"] as? [String: Any]).map { Self.values($0["attributes"]).count } == 4)
        let scopeSpans = try #require((resourceSpans["scope_spans"] as? [[String: Any]])?.first)
        #expect((scopeSpans["scope"] as? [String: Any])?["name"] as? String == "cloak")
        let spans = try #require(scopeSpans["spans"] as? [[String: Any]])
        #expect(spans.count == 5)

        let first = spans[0]
        #expect(Self.hex(first["trace_id"]) == "01020304050607080000000000000001")
        #expect(Self.hex(first["span_id"]) == "0000000000000002")
        #expect(Self.hex(first["parent_span_id"]) == "0000000000000003")
        #expect(first["trace_state"] as? String == "rojo=1")
        #expect(first["name"] as? String == "POST /aliases")
        #expect(first["kind"] as? String == "SPAN_KIND_SERVER")
        #expect(first["start_time_unix_nano"] as? String == "1700000000000000001")
        #expect(first["end_time_unix_nano"] as? String == "1700000000000500000")
        #expect(first["flags"] as? Int == 1)
        let a = Self.values(first["attributes"])
        #expect(a["s"]?["string_value"] as? String == "text")
        #expect(a["empty"]?["string_value"] as? String == "", "an empty string is still a string")
        #expect(a["yes"]?["bool_value"] as? Bool == true)
        #expect(a["no"]?["bool_value"] as? Bool == false, "false is still a bool")
        #expect(a["zero"]?["int_value"] as? String == "0")
        #expect(a["negative"]?["int_value"] as? String == "-42")
        #expect(a["big"]?["int_value"] as? String == "\(Int64.max)")
        #expect(a["small"]?["int_value"] as? String == "-7")
        #expect(a[""]?["string_value"] as? String == "no key")
        #expect(a["half"]?["double_value"] as? Double == 1.5)
        #expect(a["nought"]?["double_value"] as? Double == 0)
        #expect(a["unicode ✓"]?["string_value"] as? String == "naïve")
        let strings = (a["strings"]?["array_value"] as? [String: Any])?["values"] as? [[String: Any]]
        #expect(strings?.map { $0["string_value"] as? String } == ["a", ""])
        let ints = (a["ints"]?["array_value"] as? [String: Any])?["values"] as? [[String: Any]]
        #expect(ints?.map { $0["int_value"] as? String } == ["1", "0", "-1"])
        let flags = (a["flags"]?["array_value"] as? [String: Any])?["values"] as? [[String: Any]]
        #expect(flags?.map { $0["bool_value"] as? Bool } == [true, false])
        let doubles = (a["doubles"]?["array_value"] as? [String: Any])?["values"] as? [[String: Any]]
        #expect(doubles?.map { $0["double_value"] as? Double } == [0, 2.5])
        let event = try #require((first["events"] as? [[String: Any]])?.first)
        #expect(event["name"] as? String == "exception" && event["time_unix_nano"] as? String == "1700000000000000100")
        #expect(Self.values(event["attributes"])["exception.type"]?["string_value"] as? String == "Leaky")
        let link = try #require((first["links"] as? [[String: Any]])?.first)
        #expect(Self.hex(link["trace_id"]) == "01020304050607080000000000000009")
        #expect(Self.hex(link["span_id"]) == "000000000000000a" && link["trace_state"] as? String == "vendor=abc")
        #expect(Self.values(link["attributes"])["cloak.link"]?["string_value"] as? String == "call")
        let status = try #require(first["status"] as? [String: Any])
        #expect(status["code"] as? String == "STATUS_CODE_ERROR" && status["message"] as? String == "failed")

        let second = spans[1]
        #expect(second["parent_span_id"] == nil && second["kind"] as? String == "SPAN_KIND_CLIENT")
        #expect((second["attributes"] as? [Any])?.count == OTLPTraceEncoding.maxAttributes)
        #expect(second["dropped_attributes_count"] as? Int == 3)
        #expect(second["dropped_events_count"] as? Int == 2 && second["dropped_links_count"] as? Int == 7)
        #expect((second["status"] as? [String: Any])?["code"] as? String == "STATUS_CODE_OK")
        #expect(spans[2]["kind"] as? String == "SPAN_KIND_INTERNAL" && spans[2]["status"] == nil)
        #expect(spans[3]["kind"] as? String == "SPAN_KIND_PRODUCER")
        #expect(spans[4]["kind"] as? String == "SPAN_KIND_CONSUMER")
    }

    @Test func anEmptyBatchIsAValidRequest() throws {
        let result = try Self.decoded(OTLPTraceEncoding(serviceName: "cloak").exportRequest([FinishedSpan]()))
        #expect(result["same_bytes"] as? Bool == true && result["unknown"] as? [String] == [])
    }
}
