import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// `ANY /proxy/{path}`: picks the route, runs its form (validate, alias, map), and forwards the
/// redacted body through the loop's vault-proxy client; the upstream's answer comes back as it is.
struct ProxyHandler: Sendable {
    let context: ServiceContext
    let vault: VaultClient?
    let routes: [ResolvedRoute]
    let identity: Identity

    /// A configured route with its upstream parsed once.
    struct ResolvedRoute: Sendable {
        let settings: ServiceConfiguration.RouteSettings
        /// `/proxy` + the route's path, without a trailing slash.
        let prefix: String
        /// nil for `upstream: echo`.
        let upstream: (scheme: UpstreamRequest.Scheme, host: String, port: Int, path: String)?
    }

    static func resolve(_ routes: [ServiceConfiguration.RouteSettings]) -> [ResolvedRoute] {
        routes.map { r in
            var path = r.path
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            return ResolvedRoute(
                settings: r, prefix: "/proxy" + (path == "/" ? "" : path),
                upstream: r.upstream == "echo" ? nil : UpstreamRequest.parse(url: r.upstream))
        }
    }

    func handle(_ request: HTTPRequest) throws(CloakError) -> Reply {
        let route = try pick(request)
        guard route.settings.methods.contains(request.method.rawValue) else {
            let allowed = route.settings.methods.joined(separator: ", ")
            return .now(
                .error(
                    CloakError(
                        .methodNotAllowed,
                        "\(request.method.rawValue) is not allowed on this route; allowed: \(allowed)"),
                    headers: [("Allow", allowed)]))
        }
        let rest = try Self.forwardedRest(request, route: route)
        if !route.settings.requestOperations.isEmpty || !route.settings.responseOperations.isEmpty {
            return try transformAndForward(request, route: route, rest: rest)
        }
        guard let formName = route.settings.form else {
            return forward(request, route: route, rest: rest, body: request.body, jsonBody: false)
        }
        guard let vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        let caller = try identity.aliasCaller(openTokenize: context.configuration.openTokenize)
        let prepared = try PreparedSubmission(
            request, form: formName, context: context, caller: caller,
            keepSensitiveRaw: true)
        return .later { finish in
            prepared.resolve(with: vault, failing: finish) { entries, _ in
                let body = JSONWriter.encode(prepared.body(entries))
                switch forward(request, route: route, rest: rest, body: body, jsonBody: true) {
                case let .now(response): finish(response)
                case let .later(work): work(finish)
                }
            }
        }
    }

    /// What follows the route's path, still percent-encoded as the client sent it (checked by
    /// ``ForwardedPath``).
    static func forwardedRest(_ request: HTTPRequest, route: ResolvedRoute) throws(CloakError) -> String {
        guard request.rawPath.hasPrefix(route.prefix) else {
            throw .malformed("the route's own path must not be percent-encoded")
        }
        let rest = String(request.rawPath.dropFirst(route.prefix.count))
        try ForwardedPath.check(rest)
        return rest
    }

    /// The route for the request's path: the longest matching prefix, then `X-Route-Id` among
    /// routes that share it.
    func pick(_ request: HTTPRequest) throws(CloakError) -> ResolvedRoute {
        let matching = routes.filter { request.path == $0.prefix || request.path.hasPrefix($0.prefix + "/") }
        let longest = matching.map(\.prefix.count).max() ?? -1
        let candidates = matching.filter { $0.prefix.count == longest }
        if let id = request.header("X-Route-Id") {
            guard UUID(uuidString: id) != nil else {
                throw CloakError(.invalidConfigurationURL, "X-Route-Id must be a route's UUID")
            }
            guard let route = candidates.first(where: { $0.settings.id.lowercased() == id.lowercased() }) else {
                throw .notFound("no route \(id) serves this path")
            }
            return route
        }
        guard let route = candidates.first else { throw .notFound("no route serves this path") }
        guard candidates.count == 1 else {
            throw .notFound("\(candidates.count) routes share this path; name one with X-Route-Id")
        }
        return route
    }

    /// A route with `request:` or `response:` operations: what they select is aliased or
    /// revealed, one vault job per kind and message. Reveal needs a token with `aliases:reveal`:
    /// an answer's revealed values reach the caller, and a request's reach the upstream on the
    /// caller's word.
    private func transformAndForward(_ request: HTTPRequest, route: ResolvedRoute, rest: String) throws(CloakError)
        -> Reply
    {
        let settings = route.settings
        if settings.requestOperations.contains(where: { $0.action == .reveal })
            || settings.responseOperations.contains(where: { $0.action == .reveal })
        {
            _ = try identity.require("aliases:reveal")
        }
        let requestCaller =
            settings.requestOperations.contains { $0.action == .redact }
            ? try identity.aliasCaller(openTokenize: context.configuration.openTokenize) : .anonymous
        let exchange = TransformedExchange(
            vault: vault, request: settings.requestOperations, response: settings.responseOperations,
            requestCaller: requestCaller,
            responseCaller: AliasCaller(mayReveal: false, anonymous: !identity.isCreator),
            maxSelected: vault?.settings.maxBatch ?? Int.max, limitName: "vault.max_batch")
        let outgoing = request
        return .later { finish in
            do throws(CloakError) {
                try exchange.start(
                    body: request.body, headers: request.headers,
                    send: { body, headers, done in
                        var message = outgoing
                        message.body = body
                        message.headers = headers
                        // An upstream's failure stays a failure: it is answered as such, never run
                        // through the answer's operations as if it were the upstream's answer.
                        do throws(CloakError) {
                            switch try destination(message, route: route, rest: rest, body: body, jsonBody: false) {
                            case let .echo(response): done(.success(response))
                            case let .upstream(upstreamRequest, loop): loop.call(upstreamRequest, done: done)
                            }
                        } catch {
                            done(.failure(error))
                        }
                    }, finish: { response, _ in finish(response) })
            } catch {
                finish(.error(error))
            }
        }
    }

    /// Request headers never forwarded: Cloak frames the request and names the route itself.
    static let droppedHeaders = ["host", "content-length", "x-route-id"]

    private func forward(_ request: HTTPRequest, route: ResolvedRoute, rest: String, body: [UInt8], jsonBody: Bool)
        -> Reply
    {
        do throws(CloakError) {
            switch try destination(request, route: route, rest: rest, body: body, jsonBody: jsonBody) {
            case let .echo(response):
                return .now(response)
            case let .upstream(upstreamRequest, loop):
                return .later { finish in
                    loop.call(upstreamRequest) { result in
                        switch result {
                        case let .success(response): finish(response)
                        case let .failure(error): finish(.error(error))
                        }
                    }
                }
            }
        } catch {
            return .now(.error(error))
        }
    }

    /// Where a request on `route` goes.
    private enum Destination {
        /// `upstream: echo`: the body as the upstream would have received it.
        case echo(HTTPResponse)
        /// The request for the upstream, sent from this loop.
        case upstream(UpstreamRequest, LoopHandle)
    }

    private func destination(
        _ request: HTTPRequest, route: ResolvedRoute, rest: String, body: [UInt8],
        jsonBody: Bool
    ) throws(CloakError) -> Destination {
        guard let upstream = route.upstream else {
            return .echo(
                HTTPResponse(
                    status: 200,
                    headers: [
                        (
                            "Content-Type",
                            jsonBody ? "application/json" : request.header("Content-Type") ?? "application/octet-stream"
                        )
                    ], body: body))
        }
        guard let loop = request.loop else {
            throw CloakError(.unexpectedResponseType, "no event loop to reach the upstream from")
        }
        var path = upstream.path
        if !rest.isEmpty { path = (path.hasSuffix("/") ? String(path.dropLast()) : path) + rest }
        let target = path + (request.query.map { "?" + HTTPSyntax.safeQuery($0) } ?? "")
        // Authorization goes upstream only when the route says so, and never when it is a Cloak
        // token (a confused client must not hand the vault's credential to a third party).
        let dropsAuthorization = !(route.settings.forwardAuthorization && identity.token == nil)
        // Names compared in place (no lowercased copy per header).
        var headers = withoutHopByHop(request.headers).filter { header in
            !Self.droppedHeaders.contains { header.name.caseInsensitiveEquals($0) }
                && !(dropsAuthorization && header.name.caseInsensitiveEquals("authorization"))
        }
        if jsonBody {
            headers.removeAll { $0.name.caseInsensitiveEquals("content-type") }
            headers.append(("Content-Type", "application/json"))
        }
        for (name, value) in route.settings.headers {
            headers.removeAll { $0.name.caseInsensitiveEquals(name) }
            headers.append((name, value))
        }
        return .upstream(
            UpstreamRequest(
                scheme: upstream.scheme, host: upstream.host, port: upstream.port, target: target,
                method: request.method,
                headers: headers, body: body, timeoutSeconds: route.settings.responseTimeoutSeconds,
                connectTimeoutSeconds: route.settings.connectTimeoutSeconds, caFile: route.settings.caFile), loop)
    }
}
