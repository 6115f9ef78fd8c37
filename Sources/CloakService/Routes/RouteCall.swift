import CloakCore
import CloakHTTP
import CloakVault

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

    typealias Finish = @Sendable (HTTPResponse, RouteExchange.Outcome) -> Void

    /// Starts the exchange: a request whose selections fail (1002, 1422) throws before anything
    /// is queued or sent; otherwise `finish` gets the client's answer and what was done.
    ///
    /// - Parameters:
    ///   - rest: what follows the route's own path, as sent (the whole path on an egress route).
    ///   - headers: the client's headers that go upstream (``Route/forwardedHeaders(_:keepAuthorization:)``).
    ///   - contentType: the body's type when the body is Cloak's own (a form route's JSON).
    func start(
        _ request: HTTPRequest, rest: String, headers: [(name: String, value: String)], body: [UInt8],
        contentType: String? = nil, finish: @escaping Finish
    ) throws(CloakError) {
        let send: TransformedExchange.Send
        if let upstream = route.upstream {
            guard let loop = request.loop else {
                throw CloakError(.unexpectedResponseType, "no event loop to reach the upstream from")
            }
            let target = Route.target(upstream, rest: rest, query: request.query)
            let method = request.method
            let route = self.route
            send = { body, headers, done in
                let headers = route.sentHeaders(headers, contentType: contentType)
                loop.call(
                    Route.request(to: upstream, method: method, target: target, headers: headers, body: body),
                    done: done)
            }
        } else {
            send = { body, headers, done in
                let type = contentType ?? headers.first { $0.name.caseInsensitiveEquals("Content-Type") }?.value
                done(
                    .success(
                        HTTPResponse(
                            status: 200, headers: [("Content-Type", type ?? "application/octet-stream")],
                            body: body)))
            }
        }
        let exchange = TransformedExchange(
            vault: vault, request: route.requestOperations, response: route.responseOperations,
            requestCaller: requestCaller, responseCaller: responseCaller,
            maxSelected: min(route.maxAliases, vault?.settings.maxBatch ?? route.maxAliases), limitName: limitName)
        try exchange.start(body: body, headers: headers, loop: request.loop, send: send, finish: finish)
    }
}
