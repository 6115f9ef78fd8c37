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
    /// Where the names of the route's steps go once they ran (the access log's and the audit
    /// line's `steps`); nil when nobody asks.
    var stepsRan: StepsRan? = nil

    typealias Finish = @Sendable (HTTPResponse, RouteExchange.Outcome) -> Void

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
            let trace = self.trace
            let stepsRan = self.stepsRan
            let callerMaySeeValues = self.callerMaySeeValues
            send = { body, headers, done in
                Self.sendUpstream(
                    body, headers, route: route, upstream: upstream, method: method, target: target,
                    contentType: contentType, trace: trace, stepsRan: stepsRan,
                    callerMaySeeValues: callerMaySeeValues, loop: loop, done: done)
            }
        } else {
            send = { body, headers, done in
                let type = contentType ?? headers.first { $0.name.caseInsensitiveEquals("Content-Type") }?.value
                done(
                    .success(
                        HTTPResponse(
                            status: 200, headers: [("Content-Type", type ?? "application/octet-stream")],
                            body: body.bytes)))
            }
        }
        let exchange = TransformedExchange(
            vault: vault, request: route.requestOperations.filter { !$0.revealsFiles },
            response: route.responseOperations,
            requestCaller: requestCaller, responseCaller: responseCaller,
            maxSelected: min(route.maxAliases, vault?.settings.maxBatch ?? route.maxAliases), limitName: limitName,
            callerMaySeeValues: callerMaySeeValues, files: files)
        try exchange.start(body: body, headers: headers, loop: request.loop, send: send, finish: finish)
    }

    /// Sends the request upstream: the route's headers, the trace context, then its steps on
    /// the final bytes; the answer's steps run on what comes back before `done` sees it.
    private static func sendUpstream(
        _ body: OutgoingBody, _ headers: [(name: String, value: String)], route: Route, upstream: Route.Upstream,
        method: HTTPMethod, target: String, contentType: String?, trace: RequestTrace?, stepsRan: StepsRan?,
        callerMaySeeValues: Bool, loop: LoopHandle, done: @escaping @Sendable (Result<HTTPResponse, CloakError>) -> Void
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
            to: upstream, method: method, target: target, headers: headers, body: body.bytes)
        request.bodySource = body.stream
        request.streamedLength = body.length
        var readable: [[UInt8]] = []
        if !route.requestSteps.isEmpty {
            // Steps run on the bytes as they go, Host and the trace headers included;
            // configuration keeps them off routes that stream a body.
            var message = OutgoingMessage(
                method: method.rawValue, scheme: upstream.scheme, host: upstream.host, port: upstream.port,
                target: target, headers: request.headers, body: request.body)
            do throws(CloakError) {
                try Route.Step.apply(route.requestSteps, to: &message, firstIndex: route.requestOperations.count)
            } catch {
                span?.set("cloak.error.code", error.code.rawValue)
                span?.setStatus(SpanStatus(code: .error))
                span?.end()
                return done(.failure(error))
            }
            request.headers = message.headers
            request.body = message.body
            request.streamedLength = message.body.count
            if !callerMaySeeValues {
                // What the steps wrote that an echo would hand back: a JWS payload carries the
                // body readably, and a digest or signature of it lets a caller test guesses of
                // a revealed card offline.
                readable = message.readableEncodings
                for header in message.headers
                where header.value.utf8.count >= RevealedValues.minimumLength
                    && !request.headers.contains(where: { $0.name == header.name && $0.value == header.value })
                {
                    readable.append(Array(header.value.utf8))
                }
            }
            stepsRan?.names = route.requestSteps.map(\.name).joined(separator: ",")
        }
        let steps = route.responseSteps
        let echoed = readable
        let answered: @Sendable (Result<HTTPResponse, CloakError>) -> Void = { result in
            guard case .success(var response) = result else { return done(result) }
            // As RevealedValues refuses an answer echoing a revealed value to a caller who may
            // not see it, so one echoing what the steps wrote over revealed values.
            if echoed.contains(where: { needle in
                response.body.withUnsafeBufferPointer { RevealedValues.contains($0, needle) }
                    || response.headers.contains { header in
                        var value = header.value
                        return value.withUTF8 { RevealedValues.contains($0, needle) }
                    }
            }) {
                return done(
                    .failure(
                        CloakError(
                            .unexpectedResponseDataFormat,
                            "the upstream answered \(response.status), but its answer: it holds what a step wrote "
                                + "over revealed values (a signature, a digest, a signed body), which is not passed on")
                    ))
            }
            guard !steps.isEmpty else { return done(result) }
            if response.headers.contains(where: {
                $0.name.caseInsensitiveEquals("Content-Encoding") && !$0.value.caseInsensitiveEquals("identity")
            }) {
                return done(
                    .failure(
                        CloakError(
                            .unexpectedResponseDataFormat,
                            "the upstream answered \(response.status), but its answer: it is encoded "
                                + "(Content-Encoding), and this route opens answers")))
            }
            do throws(CloakError) {
                for name in try Route.ResponseStep.apply(steps, to: &response) {
                    stepsRan?.names += (stepsRan?.names.isEmpty ?? true ? "" : ",") + name
                }
            } catch {
                return done(.failure(error))
            }
            done(.success(response))
        }
        guard let span else { return loop.call(request, done: answered) }
        span.set("server.address", upstream.host)
        span.set("server.port", upstream.port)
        span.set("http.request.body.size", request.streamedLength)
        loop.call(request) {
            result in
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

/// The names of the steps a route ran on a request, for the lines written when it is answered.
/// Written by the upstream send and read by the finish, both on the request's loop, one after
/// the other (the answer comes after the send).
final class StepsRan: @unchecked Sendable {
    var names: String = ""
}
