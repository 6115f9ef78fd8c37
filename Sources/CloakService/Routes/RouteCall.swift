import CloakCore
import CloakHTTP
import CloakVault
import Tracing

/// Sends one request through a route, for either door and every kind of route: the route's
/// request operations, the upstream (or, for `upstream: echo`, the caller), its response
/// operations. One ``RouteExchange`` decides; ``TransformedExchange`` carries it out. The door
/// has already picked the route and checked its caller.
struct RouteCall: Sendable {
    let route: Route
    let vault: VaultClient?
    /// Who aliases values redacted from the request, and from the answer.
    let requestCaller: AliasCaller
    let responseCaller: AliasCaller
    /// What to call the bound on selected values in the error (the route's and the vault's).
    let limitName: String
    /// The request's span, when tracing is on: each upstream exchange is a child span, and the
    /// upstream gets `traceparent` for it.
    var trace: RequestTrace? = nil
    /// The route's file reveals (``FileRevealing``), when it has any.
    var files: FileRevealing? = nil
    /// Whether the caller may see revealed values (it holds `aliases:reveal`): if not, an answer
    /// holding a value the request revealed is not passed on (``RevealedValues``).
    var callerMaySeeValues = false
    /// Whom the upstream exchange is for (``RouteCall/caller(_:_:)``): pooled connections are
    /// reused only for the same one.
    var upstreamCaller = ""
    /// Where the names of the route's steps go once they ran (the access log's and the audit
    /// line's `steps`); nil when nobody asks.
    var stepsRan: StepsRan? = nil

    typealias Finish = @Sendable (HTTPResponse, RouteExchange.Outcome) -> Void

    /// Who a door's caller is, for the upstream pool: its token when it presented one (one
    /// principal wherever it calls from), else its client address (after trusted proxies).
    static func caller(_ identity: Identity, _ request: HTTPRequest) -> String {
        identity.token.map { "token " + $0.id } ?? "address " + request.remoteAddress
    }

    /// Starts the exchange: a request whose selections fail (1002, 1422) throws before anything
    /// is queued or sent; otherwise `finish` gets the client's answer and what was done.
    ///
    /// - Parameters:
    ///   - rest: what follows the route's own path, as sent (the whole path on an egress route).
    ///   - headers: the client's headers that go upstream
    ///     (``Route/forwardedHeaders(_:keepAuthorization:trustedContext:)``).
    ///   - contentType: the body's type when the body is Cloak's own (a form route's JSON).
    func start(
        _ request: HTTPRequest, rest: String, headers: [(name: String, value: String)], body: [UInt8],
        contentType: String? = nil, produced: [String] = [], finish: @escaping Finish
    ) throws(CloakError) {
        let send: TransformedExchange.Send
        if let upstream = route.upstream {
            guard let loop = request.loop else {
                throw CloakError(.unexpectedResponseType, "no event loop to reach the upstream from")
            }
            let target = Route.target(upstream, rest: rest, query: request.query)
            let method = request.method
            let route = self.route
            let trace = self.trace
            let stepsRan = self.stepsRan
            let caller = self.upstreamCaller
            send = { body, headers, done in
                Self.sendUpstream(
                    body, headers, route: route, upstream: upstream, method: method, target: target,
                    contentType: contentType, trace: trace, stepsRan: stepsRan, caller: caller, loop: loop, done: done)
            }
        } else {
            send = { body, headers, done in
                let type = contentType ?? headers.first { $0.name.caseInsensitiveEquals("Content-Type") }?.value
                done(
                    .success(
                        HTTPResponse(
                            status: 200, headers: [("Content-Type", type ?? "application/octet-stream")],
                            body: body.bytes)), StepWrites())
            }
        }
        var exchange = TransformedExchange(
            vault: vault, request: route.requestOperations.filter { !$0.revealsFiles },
            response: route.responseOperations,
            requestCaller: requestCaller, responseCaller: responseCaller,
            maxSelected: min(route.maxAliases, vault?.settings.maxBatch ?? route.maxAliases), limitName: limitName,
            callerMaySeeValues: callerMaySeeValues, files: files)
        if route.door == .inbound {
            exchange.inbound = RouteExchange.Inbound(
                routeID: route.id, unselectedCards: route.unselectedCards, query: request.query ?? "", path: rest,
                produced: produced)
        }
        try exchange.start(body: body, headers: headers, loop: request.loop, send: send, finish: finish)
    }

    /// Sends the request upstream: the route's headers, the trace context, then its steps on
    /// the final bytes (``RouteStepRun``); the answer's steps run on what comes back before
    /// `done` sees it.
    private static func sendUpstream(
        _ body: HTTPBody, _ headers: [(name: String, value: String)], route: Route, upstream: Route.Upstream,
        method: HTTPMethod, target: String, contentType: String?, trace: RequestTrace?, stepsRan: StepsRan?,
        caller: String, loop: LoopHandle,
        done: @escaping @Sendable (Result<HTTPResponse, CloakError>, StepWrites) -> Void
    ) {
        var headers = route.sentHeaders(headers, contentType: contentType)
        let span = trace?.child("upstream " + method.rawValue, kind: .client)
        if let trace, let span {
            headers.removeAll { RequestTrace.isTraceHeader($0.name) }
            headers += trace.headers(for: span)
        }
        if !route.responseSteps.isEmpty {
            // An answer to open is asked for unencoded: a compressed JWE would pass unopened.
            headers.removeAll { $0.name.caseInsensitiveEquals("Accept-Encoding") }
            headers.append(("Accept-Encoding", "identity"))
        }
        var request = Route.request(
            to: upstream, method: method, target: target, headers: headers, body: [])
        request.content = body
        request.caller = caller
        guard !route.requestSteps.isEmpty || !route.responseSteps.isEmpty else {
            return exchange(request, upstream: upstream, span: span, loop: loop) { done($0, StepWrites()) }
        }
        let run = RouteStepRun(route: route, loop: loop, stepsRan: stepsRan)
        run.prepare(request) { prepared in
            switch prepared {
            case .failure(let error):
                span?.set("cloak.error.code", error.code.rawValue)
                span?.setStatus(SpanStatus(code: .error))
                span?.end()
                done(.failure(error), StepWrites())
            case .success(let (request, written)):
                exchange(request, upstream: upstream, span: span, loop: loop) { result in
                    run.answer(result) { done($0, written) }
                }
            }
        }
    }

    /// The upstream call, in the request's span when it has one.
    private static func exchange(
        _ request: UpstreamRequest, upstream: Route.Upstream, span: RecordedSpan?, loop: LoopHandle,
        answered: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void
    ) {
        guard let span else { return loop.call(request, done: answered) }
        span.set("server.address", upstream.host)
        span.set("server.port", upstream.port)
        span.set("http.request.body.size", request.content.length ?? 0)
        loop.call(request) { result in
            switch result {
            case let .success(response):
                span.set("http.response.status_code", response.status)
                span.set("http.response.body.size", response.body.count)
            case let .failure(error):
                span.set("cloak.error.code", error.code.rawValue)
                span.setStatus(SpanStatus(code: .error))
            }
            span.end()
            answered(result)
        }
    }
}
