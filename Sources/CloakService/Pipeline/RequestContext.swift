import CloakCore
import CloakHTTP

/// One request on its way through a door: what the middleware learned about it (who sent it,
/// which endpoint it names) for the ones after it, the handler, and the answer's way back.
struct RequestContext: Sendable {
    var request: HTTPRequest
    /// Monotonic nanoseconds when the door took the request (metrics, the access log).
    let start: UInt64
    /// Who sent it (``AuthMiddleware``); anonymous until then.
    var identity = Identity.anonymous
    /// What the router found for the method and path (``RoutingMiddleware``).
    var route: Router<Endpoint>.Resolution = .notFound
    /// A CORS preflight (`OPTIONS` with `Access-Control-Request-Method`): never routed.
    var isPreflight = false
    /// The label of metrics and the access log: the route's template once the request was
    /// admitted (``RateLimitMiddleware``), `OPTIONS *` for an answered preflight; `-` for a
    /// request refused before (a violation, a 429) or that matched nothing.
    var template = "-"
    /// What the handler of an audited endpoint did (``ScopeMiddleware`` makes it on admission;
    /// ``AuditMiddleware`` writes it).
    var outcome: Outcome?
    /// The request's span, when tracing is on (``TracingMiddleware``).
    var trace: RequestTrace?
    /// Whether the caller's trace context (`traceparent`, `tracestate`, `baggage`) is taken
    /// (``TracingMiddleware``, by `telemetry.traces.trust_incoming_context`): only then is its
    /// trace continued, or its `baggage` passed to a route with `forward_baggage`.
    var trustsCallerContext = false
    /// The error the answer is, when it is Cloak's own (a step's refusal, a handler's failure;
    /// ``Door`` sets it from what was thrown or ``Reply/Failure``): the response phase reads the
    /// code here, never from the body, which may be an upstream's.
    var error: CloakError?
    /// What a route did (the steps that ran, the selectors that took a value and those that took
    /// none), for the access log; empty for every other request.
    var routeFacts = Reply.RouteFacts()
    /// The console's session and its cookie value, on the console's listener when one was
    /// presented and holds (``ConsoleGuardMiddleware``).
    var console: (cookie: String, session: ConsoleSessions.Session)?

    init(_ request: HTTPRequest, start: UInt64) {
        self.request = request
        self.start = start
    }

    /// The endpoint the request names, when the router found one for its method.
    var endpoint: Endpoint? {
        if case let .found(endpoint, _, _) = route { return endpoint }
        return nil
    }

    /// The template of the route the path matched (for any method), or `-`.
    var routeTemplate: String {
        switch route {
        case let .found(_, _, template), let .methodNotAllowed(_, template): return template
        case .notFound: return "-"
        }
    }

    /// A path parameter of the matched route (`{form}`, `{alias}`), empty when absent.
    func parameter(_ name: String) -> String {
        if case let .found(_, parameters, _) = route { return parameters[name] ?? "" }
        return ""
    }
}
