import CloakCore
import CloakHTTP
import Dispatch
import Foundation
import Instrumentation
import Tracing

/// One traced request: the tracer and the request span, for the spans inside it (the vault
/// call, each upstream exchange) and the ids its log lines carry. Made by ``TracingMiddleware``
/// only when `telemetry.traces` is on; nil otherwise, and then nothing of tracing runs.
///
/// Span names are route templates and fixed words; attributes are methods, statuses, codes,
/// counts, hosts and byte counts: never a value, an alias, a token, a key or a session.
struct RequestTrace: Sendable {
    let tracer: CloakTracer
    let span: RecordedSpan

    /// The request span's trace and span ids, for log lines (hex, as in `traceparent`); nil for
    /// a span the exporter will not send (a caller's unsampled trace).
    var ids: (traceID: String, spanID: String)? {
        guard span.traceContext.sampled else { return nil }
        return (span.traceContext.traceID.hex, span.traceContext.spanID.hex)
    }

    /// The request span's context for the access log line; nil as for ``ids``.
    var loggedContext: TraceContext? { span.traceContext.sampled ? span.traceContext : nil }

    /// A child span of the request's (`kind`: `.client` for the vault and upstreams).
    func child(_ name: String, kind: SpanKind) -> RecordedSpan {
        tracer.startSpan(name, context: span.context, ofKind: kind)
    }

    /// `traceparent` (and `tracestate`, when the context has one) for a request sent on behalf
    /// of `span`: the upstream continues this trace under that span.
    func headers(for span: RecordedSpan) -> [(name: String, value: String)] {
        var carrier: [(name: String, value: String)] = []
        tracer.inject(span.context, into: &carrier, using: HeaderInjector())
        return carrier
    }

    /// A monotonic instant (``DispatchTime``'s nanoseconds) as a wall-clock one.
    static func instant(monotonic nanoseconds: UInt64) -> EpochInstant {
        let wall = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        let age = DispatchTime.now().uptimeNanoseconds &- nanoseconds
        return EpochInstant(nanosecondsSinceEpoch: age < wall ? wall - age : wall)
    }

    /// Whether a header is one of the W3C trace context's: Cloak writes its own on every
    /// forwarded request and never passes a caller's.
    static func isTraceHeader(_ name: String) -> Bool {
        name.caseInsensitiveEquals("traceparent") || name.caseInsensitiveEquals("tracestate")
    }
}

struct EpochInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64
    static func < (a: EpochInstant, b: EpochInstant) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }
}

/// Reads `traceparent` (the first field) and `tracestate` (every field, joined with commas as
/// RFC 9110 combines a list field) from a request's headers.
struct RequestHeaderExtractor: Extractor {
    func extract(key: String, from request: HTTPRequest) -> String? {
        guard key == "tracestate" else { return request.header(key) }
        let fields = request.headerValues(key)
        return fields.isEmpty ? nil : fields.joined(separator: ",")
    }
}

/// Writes trace headers into a header list.
struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout [(name: String, value: String)]) {
        headers.removeAll { $0.name.caseInsensitiveEquals(key) }
        headers.append((key, value))
    }
}
