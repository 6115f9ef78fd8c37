import CloakCore
import CloakHTTP
import Dispatch
import Instrumentation
import Synchronization
import Tracing

/// One span per request of the API door, named by its route template (`POST /aliases/{alias}`),
/// with the method, the status and the VGSError code. A caller's `traceparent` is continued
/// only when it is trusted (it presented a valid token, or it came through
/// `server.trusted_proxies`); anyone else starts a new trace, so no stranger can join or steer
/// an operator's traces. Without a tracer the step does nothing.
///
/// Head sampling of new traces happens here, before the tracer is asked: a request that starts
/// no kept trace costs one random draw and nothing of the tracer (no ids drawn, no span made).
/// A continued trace is the caller's decision (its sampled flag: the tracer's parent-based sampler).
struct TracingMiddleware: Middleware {
    let tracer: (any Tracer)?
    /// `telemetry.traces.sample_ratio`, for traces Cloak starts.
    var sampleRatio: Double = 1

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard let tracer else { return nil }
        var parent = InstrumentationContext.topLevel
        let continues =
            (context.identity.token != nil || context.viaTrustedProxy)
            && context.request.header("traceparent") != nil
        if continues {
            tracer.extract(context.request, into: &parent, using: RequestHeaderExtractor())
        } else if !SampleDraw.keep(ratio: sampleRatio) {
            return nil
        }
        let name = context.request.method.rawValue + " " + context.routeTemplate
        let span = tracer.startSpan(
            name, context: parent, ofKind: .server, at: RequestTrace.instant(monotonic: context.start))
        span.attributes["http.request.method"] = context.request.method.rawValue
        span.attributes["http.route"] = context.routeTemplate
        context.trace = RequestTrace(tracer: tracer, span: span)
        return nil
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard let span = context.trace?.span else { return }
        span.attributes["http.response.status_code"] = response.status
        if let code = Self.errorCode(response) {
            span.attributes["cloak.error.code"] = code
            span.setStatus(SpanStatus(code: .error))
        }
        span.end()
    }

    /// The code of a Cloak VGSError body (never of an upstream's answer, whatever it holds).
    static func errorCode(_ response: HTTPResponse) -> Int? {
        guard response.status >= 400 else { return nil }
        let prefix = Array(#"{"error":{"domain":"vgscollect.sdk","code":"#.utf8)
        let body = response.body
        guard body.count > prefix.count + 4, body.starts(with: prefix) else { return nil }
        var code = 0
        for byte in body[prefix.count..<(prefix.count + 4)] {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            code = code * 10 + Int(byte - 0x30)
        }
        return code
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
