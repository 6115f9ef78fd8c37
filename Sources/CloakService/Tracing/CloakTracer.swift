import Instrumentation
import Tracing

/// Cloak's tracer: spans with W3C Trace Context ids, handed to ``TraceExport`` when they end.
///
/// Sampling is parent-based: a span with a parent (a caller's `traceparent` Cloak trusts, or a
/// span of its own) is sampled when its parent is; a span without one is always sampled,
/// because new traces are sampled at `telemetry.traces.sample_ratio` before the tracer is asked
/// (``TracingMiddleware``). A span that is not sampled still has ids and passes its context on
/// (`traceparent` with flags `00`), so an upstream learns the caller's decision; it records
/// nothing and is never exported.
///
/// Propagation is W3C Trace Context only (`traceparent`, `tracestate`), as ``TraceContext``
/// reads and writes it; baggage is a route's own business (`forward_baggage`).
final class CloakTracer: Tracer {
    typealias Span = RecordedSpan

    let sink: any SpanSink

    init(sink: any SpanSink) { self.sink = sink }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        let parentContext = context()
        let traceContext: TraceContext
        let parent: SpanID?
        if let inherited = parentContext[TraceContextKey.self] {
            traceContext = TraceContext(
                traceID: inherited.traceID, spanID: .random(), sampled: inherited.sampled,
                traceState: inherited.traceState)
            parent = inherited.spanID
        } else {
            traceContext = .newTrace()
            parent = nil
        }
        return RecordedSpan(
            name: operationName, context: parentContext, traceContext: traceContext, parent: parent, kind: kind,
            start: instant().nanosecondsSinceEpoch, sink: traceContext.sampled ? sink : nil)
    }

    func extract<Carrier, Extract>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    )
    where Extract: Extractor, Extract.Carrier == Carrier {
        guard let parent = extractor.extract(key: "traceparent", from: carrier),
            let found = TraceContext(
                traceparent: parent, tracestate: extractor.extract(key: "tracestate", from: carrier))
        else { return }
        context[TraceContextKey.self] = found
    }

    func inject<Carrier, Inject>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Inject.Carrier == Carrier {
        guard let current = context[TraceContextKey.self] else { return }
        injector.inject(current.traceparent, forKey: "traceparent", into: &carrier)
        if let state = current.traceState {
            injector.inject(state, forKey: "tracestate", into: &carrier)
        }
    }

    func forceFlush() {}
}
