import CloakCore
import CloakHTTP
import Dispatch
import Instrumentation
import Synchronization
import Tracing

/// One span per request of the API door, named by its route template (`POST /aliases/{alias}`),
/// with the method, the status and the VGSError code. A caller's `traceparent` is continued
/// only when its context is trusted (``RequestContext/trustsCallerContext``, by
/// `telemetry.traces.trust_incoming_context`: by default a caller that presented a valid token);
/// anyone else starts a new trace, so no stranger can join or steer an operator's traces, and
/// nothing of theirs goes upstream. The peer's address decides nothing: behind
/// `server.trusted_proxies` every caller's peer is the balancer. Without a tracer the step only
/// decides that trust (a route's `forward_baggage` still asks it).
///
/// Head sampling of new traces happens here, before the tracer is asked: a request that starts
/// no kept trace costs one random draw and nothing of the tracer (no ids drawn, no span made).
/// A continued trace is the caller's decision (its sampled flag: the tracer's parent-based sampler);
/// a trusted caller's `traceparent` that is not valid starts a trace of Cloak's, drawn like any.
struct TracingMiddleware: Middleware {
    let tracer: CloakTracer?
    /// `telemetry.traces.sample_ratio`, for traces Cloak starts.
    var sampleRatio: Double = 1
    /// `telemetry.traces.trust_incoming_context`.
    var trust = ServiceConfiguration.ContextTrust.authenticated

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        context.trustsCallerContext = trust.trusts(hasToken: context.identity.token != nil)
        guard let tracer else { return nil }
        var parent = InstrumentationContext.topLevel
        if context.trustsCallerContext && context.request.header("traceparent") != nil {
            tracer.extract(context.request, into: &parent, using: RequestHeaderExtractor())
        }
        // A trace Cloak starts (no trusted caller's context, or one that was not valid).
        if parent[TraceContextKey.self] == nil && !SampleDraw.keep(ratio: sampleRatio) {
            return nil
        }
        // The endpoint's own name when the request has its one method (HEAD is served by GET's).
        let name: String
        if let endpoint = context.endpoint, let fixed = endpoint.spanName, endpoint.methods[0] == context.request.method
        {
            name = fixed
        } else {
            name = context.request.method.rawValue + " " + context.routeTemplate
        }
        let span = tracer.startSpan(
            name, context: parent, ofKind: .server, at: RequestTrace.instant(monotonic: context.start))
        span.set("http.request.method", context.request.method.rawValue)
        span.set("http.route", context.routeTemplate)
        context.trace = RequestTrace(tracer: tracer, span: span)
        return nil
    }

    /// The status, and the code of the error Cloak answered with (``RequestContext/error``):
    /// an upstream's answer passed through has none, whatever its body holds.
    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard let span = context.trace?.span else { return }
        span.set("http.response.status_code", response.status)
        if let error = context.error {
            span.set("cloak.error.code", error.code.rawValue)
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }
}

/// Draws for head sampling without a system call: SplitMix64 over a shared counter (the ids of
/// kept traces still come from the tracer's own random source).
enum SampleDraw {
    private static let state = Atomic<UInt64>(UInt64(truncatingIfNeeded: DispatchTime.now().uptimeNanoseconds))

    static func keep(ratio: Double) -> Bool {
        if ratio >= 1 { return true }
        if ratio <= 0 { return false }
        var z = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) * 0x1.0p-53 < ratio
    }
}
