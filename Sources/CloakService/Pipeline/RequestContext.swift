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
    /// The route's template, the label of metrics and the access log: `-` when none matched.
    var template = "-"

    init(_ request: HTTPRequest, start: UInt64) {
        self.request = request
        self.start = start
    }

    /// The endpoint the request names, when the router found one for its method.
    var endpoint: Endpoint? {
        if case let .found(endpoint, _, _) = route { return endpoint }
        return nil
    }

    /// A path parameter of the matched route (`{form}`, `{alias}`), empty when absent.
    func parameter(_ name: String) -> String {
        if case let .found(_, parameters, _) = route { return parameters[name] ?? "" }
        return ""
    }
}
