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
    func exportRequest(_ spans: [FinishedSpan]) -> [UInt8] {
        var fields = ProtobufWriter()
        for span in spans { fields.field(2, Self.span(span)) }
        return exportRequest(spanFields: fields.bytes)
    }

    /// An `ExportTraceServiceRequest` around spans already written as `ScopeSpans.spans` fields
    /// (``TraceExport/Batch``): their bytes are copied once, behind the resource and the scope,
    /// every length known before it is written.
    func exportRequest(spanFields: [UInt8]) -> [UInt8] {
        var resourceBytes = ProtobufWriter()
        for (key, value) in resource {
            resourceBytes.keyValue(1, key, .string(1, value))  // Resource.attributes
        }
        var scopeBytes = ProtobufWriter()
        scopeBytes.string(1, "cloak")  // InstrumentationScope.name
        let scopeSpansLength = ProtobufWriter.fieldSize(1, length: scopeBytes.bytes.count) + spanFields.count
        let resourceSpansLength =
            ProtobufWriter.fieldSize(1, length: resourceBytes.bytes.count)
            + ProtobufWriter.fieldSize(2, length: scopeSpansLength)

        var out = ProtobufWriter(capacity: ProtobufWriter.fieldSize(1, length: resourceSpansLength))
        out.header(1, length: resourceSpansLength)  // ExportTraceServiceRequest.resource_spans
        out.field(1, resourceBytes.bytes)  // ResourceSpans.resource
        out.header(2, length: scopeSpansLength)  // ResourceSpans.scope_spans
        out.field(1, scopeBytes.bytes)  // ScopeSpans.scope
        out.raw(spanFields)  // ScopeSpans.spans
        return out.bytes
    }

    /// `ExportTraceServiceResponse.partial_success.rejected_spans` (fields 1 and 1) in an answer's
    /// body; 0 for an empty, other or malformed body (what cannot be read rejected nothing).
    static func rejectedSpans(_ body: [UInt8]) -> Int {
        var response = ProtobufReader(body)
        while let (field, value) = response.next() {
            guard field == 1, case .bytes(let range) = value else { continue }
            var partial = ProtobufReader(Array(body[range]))
            while let (inner, innerValue) = partial.next() {
                if inner == 1, case .varint(let count) = innerValue, count <= UInt64(Int.max) { return Int(count) }
            }
        }
        return 0
    }

    /// A span's `Span` message, without its tag: what the queue holds.
    static func span(_ span: FinishedSpan) -> [UInt8] {
        var out = ProtobufWriter(capacity: 320)
        Self.span(&out, span)
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
        for entry in span.attributes.prefix(maxAttributes) { keyValue(&out, field: 9, entry.key, entry.value) }
        out.varint(10, UInt64(span.droppedAttributes + max(span.attributes.count - maxAttributes, 0)))
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
            keyValue(&out, field: field, key, value)
        }
        out.varint(droppedField, UInt64(dropped))
    }

    /// `common.v1.KeyValue`: key 1, value 2.
    static func keyValue(_ out: inout ProtobufWriter, _ key: String, _ value: SpanAttribute) {
        out.string(1, key)
        out.message(2) { anyValue(&$0, value) }
    }

    /// A `KeyValue` as field `field`: scalars (a span's attributes are) with their lengths
    /// counted first, written straight through; arrays as nested messages.
    static func keyValue(_ out: inout ProtobufWriter, field: Int, _ key: String, _ value: SpanAttribute) {
        let scalar: ProtobufWriter.Scalar
        switch value {
        case .string(let text): scalar = .string(1, text)
        case .int64(let number): scalar = .varint(3, UInt64(bitPattern: number))
        case .int32(let number): scalar = .varint(3, UInt64(bitPattern: Int64(number)))
        case .bool(let flag): scalar = .varint(2, flag ? 1 : 0)
        case .double(let number): scalar = .fixed64(4, number.bitPattern)
        default: return out.message(field) { keyValue(&$0, key, value) }
        }
        out.keyValue(field, key, scalar)
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
