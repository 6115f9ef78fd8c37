import Tracing

/// Spans as the body of an OTLP/HTTP trace export (`POST /v1/traces`,
/// `application/x-protobuf`): one `ExportTraceServiceRequest` of the OTLP 1.x protocol
/// (opentelemetry-proto `collector/trace/v1`), with one resource (the service) and one
/// instrumentation scope (`cloak`). Field numbers are the `.proto` files'; the round trip
/// through the `opentelemetry-proto` Python package is tested (`OTLPTraceEncodingTests`).
struct OTLPTraceEncoding {
    /// The resource's attributes: `service.name`, the SDK's name and language, and the
    /// operator's (`OTEL_RESOURCE_ATTRIBUTES`; never in place of those three).
    let resource: [(key: String, value: String)]

    /// Attributes past this many are left out and counted (`dropped_attributes_count`).
    static let maxAttributes = 128

    init(serviceName: String, attributes: [(name: String, value: String)] = []) {
        let own: [(key: String, value: String)] = [
            ("service.name", serviceName), ("telemetry.sdk.name", "cloak"), ("telemetry.sdk.language", "swift"),
        ]
        resource =
            own + attributes.filter { extra in !own.contains { $0.key == extra.name } }.map { ($0.name, $0.value) }
    }

    /// An `ExportTraceServiceRequest` holding `spans`.
    func exportRequest(_ spans: some Collection<FinishedSpan>) -> [UInt8] {
        var out = ProtobufWriter(capacity: 256 + spans.count * 320)
        out.message(1) { resourceSpans in  // ExportTraceServiceRequest.resource_spans
            resourceSpans.message(1) { resource in  // ResourceSpans.resource
                for (key, value) in self.resource {
                    resource.message(1) { Self.keyValue(&$0, key, .string(value)) }  // Resource.attributes
                }
            }
            resourceSpans.message(2) { scopeSpans in  // ResourceSpans.scope_spans
                scopeSpans.message(1) { $0.string(1, "cloak") }  // ScopeSpans.scope: name
                for span in spans { scopeSpans.message(2) { Self.span(&$0, span) } }  // ScopeSpans.spans
            }
        }
        return out.bytes
    }

    /// `opentelemetry.proto.trace.v1.Span`.
    static func span(_ out: inout ProtobufWriter, _ span: FinishedSpan) {
        let context = span.context
        out.bigEndian(1, context.traceID.high, context.traceID.low)
        out.bigEndian(2, context.spanID.value)
        out.string(3, context.traceState ?? "")
        if let parent = span.parentSpanID { out.bigEndian(4, parent.value) }
        out.string(5, span.name)
        out.varint(6, kind(span.kind))
        out.fixed64(7, span.startNanoseconds)
        out.fixed64(8, span.endNanoseconds)
        attributes(&out, field: 9, droppedField: 10, span.attributes)
        for event in span.events {
            out.message(11) { event1 in
                event1.fixed64(1, event.nanosecondsSinceEpoch)
                event1.string(2, event.name)
                attributes(&event1, field: 3, droppedField: 4, event.attributes)
            }
        }
        out.varint(12, UInt64(span.droppedEvents))
        for link in span.links {
            guard let linked = link.context[TraceContextKey.self] else { continue }
            out.message(13) { link1 in
                link1.bigEndian(1, linked.traceID.high, linked.traceID.low)
                link1.bigEndian(2, linked.spanID.value)
                link1.string(3, linked.traceState ?? "")
                attributes(&link1, field: 4, droppedField: 5, link.attributes)
                link1.fixed32(6, linked.sampled ? 1 : 0)
            }
        }
        out.varint(14, UInt64(span.droppedLinks))
        if let status = span.status {
            out.message(15) { status1 in
                status1.string(2, status.message ?? "")
                status1.varint(3, status.code == .ok ? 1 : 2)
            }
        }
        out.fixed32(16, context.sampled ? 1 : 0)  // W3C trace flags
    }

    /// `Span.SpanKind`: internal 1, server 2, client 3, producer 4, consumer 5.
    static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: return 1
        case .server: return 2
        case .client: return 3
        case .producer: return 4
        case .consumer: return 5
        }
    }

    private static func attributes(
        _ out: inout ProtobufWriter, field: Int, droppedField: Int, _ attributes: SpanAttributes
    ) {
        var written = 0
        var dropped = 0
        attributes.forEach { key, value in
            guard written < maxAttributes else {
                dropped += 1
                return
            }
            written += 1
            out.message(field) { keyValue(&$0, key, value) }
        }
        out.varint(droppedField, UInt64(dropped))
    }

    /// `common.v1.KeyValue`: key 1, value 2.
    static func keyValue(_ out: inout ProtobufWriter, _ key: String, _ value: SpanAttribute) {
        out.string(1, key)
        out.message(2) { anyValue(&$0, value) }
    }

    /// `common.v1.AnyValue`: string 1, bool 2, int 3, double 4, array 5 (`ArrayValue.values` 1).
    static func anyValue(_ out: inout ProtobufWriter, _ value: SpanAttribute) {
        func array<T>(_ items: [T], _ each: @escaping (inout ProtobufWriter, T) -> Void) {
            out.message(5) { list in
                for item in items { list.message(1) { each(&$0, item) } }
            }
        }
        let string: (inout ProtobufWriter, String) -> Void = { $0.string(1, $1, present: true) }
        let bool: (inout ProtobufWriter, Bool) -> Void = { $0.bool(2, $1, present: true) }
        let int: (inout ProtobufWriter, Int64) -> Void = { $0.int64(3, $1, present: true) }
        let double: (inout ProtobufWriter, Double) -> Void = { $0.double(4, $1, present: true) }
        switch value {
        case .string(let text): string(&out, text)
        case .bool(let flag): bool(&out, flag)
        case .int32(let number): int(&out, Int64(number))
        case .int64(let number): int(&out, number)
        case .double(let number): double(&out, number)
        case .stringArray(let items): array(items, string)
        case .boolArray(let items): array(items, bool)
        case .int32Array(let items): array(items) { int(&$0, Int64($1)) }
        case .int64Array(let items): array(items, int)
        case .doubleArray(let items): array(items, double)
        case .stringConvertible(let item): string(&out, item.description)
        case .stringConvertibleArray(let items): array(items) { string(&$0, $1.description) }
        default: string(&out, "\(value)")
        }
    }
}
