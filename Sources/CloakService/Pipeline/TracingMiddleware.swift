import CloakCore
import CloakHTTP
import Instrumentation
import Tracing

/// One span per request of the API door, named by its route template (`POST /aliases/{alias}`),
/// with the method, the status and the VGSError code. A caller's `traceparent` is continued
/// only when it is trusted (it presented a valid token, or it came through
/// `server.trusted_proxies`); anyone else starts a new trace, so no stranger can join or steer
/// an operator's traces. Without a tracer the step does nothing.
struct TracingMiddleware: Middleware {
    let tracer: (any Tracer)?

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard let tracer else { return nil }
        var parent = InstrumentationContext.topLevel
        if context.identity.token != nil || context.viaTrustedProxy {
            tracer.extract(context.request, into: &parent, using: RequestHeaderExtractor())
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
