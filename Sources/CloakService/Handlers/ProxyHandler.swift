import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// `ANY /proxy/{path}`: picks the inbound route, runs its form (validate, alias, map) or its
/// operations, and sends the result through ``RouteCall`` from the request's loop; the upstream's
/// answer comes back as it is, or through the route's response operations.
struct ProxyHandler: RequestHandler {
    let context: ServiceContext
    let vault: VaultClient?
    let routes: [Route]
    let identity: Identity
    /// Counts a file a route revealed upstream (metrics).
    var onFileRevealed: @Sendable (Int) -> Void = { _ in }
    /// Tells a Cloak token in any form (`Authorization` goes upstream only when it holds none).
    let authenticator: Authenticator
    /// The request's span, when tracing is on.
    var trace: RequestTrace? = nil
    /// Whether the store's disk is below `limits.disk_reserve_mib` (``DiskReserve``): a route
    /// that would alias the request's values then waits, before anything is sent upstream.
    var belowDiskReserve = false
    var diskReserveMiB = 0

    func reply(to c: RequestContext) throws(CloakError) -> Reply {
        let request = c.request
        let route = try pick(request)
        if belowDiskReserve, route.redactsRequest || route.unselectedCards == .redact || route.form != nil {
            throw DiskReserve.refusal(reserveMiB: diskReserveMiB)
        }
        guard route.methods.contains(request.method.rawValue) else {
            let allowed = route.methods.joined(separator: ", ")
            return .failed(
                .error(
                    CloakError(
                        .methodNotAllowed,
                        "\(request.method.rawValue) is not allowed on this route; allowed: \(allowed)"),
                    headers: [("Allow", allowed)]))
        }
        let rest = try Self.forwardedRest(request, route: route)
        // Authorization goes upstream only when the route says so, and never when it holds a Cloak
        // token in any form a client might send it (Bearer, Basic with the token as password, the
        // bare token): a confused client must not hand the vault's credential to a third party.
        let keepAuthorization =
            route.forwardAuthorization && identity.token == nil
            && !request.headers.contains {
                $0.name.caseInsensitiveEquals("Authorization") && authenticator.holdsToken($0.value)
            }
        let headers = route.forwardedHeaders(
            request.headers, keepAuthorization: keepAuthorization, trustedContext: c.trustsCallerContext)
        guard let formName = route.form else {
            // Each alias revealed for the backend is audited in the reveal's own transaction.
            let revealed = Outcome(
                action: .reveal, tokenID: identity.token?.id ?? "-", client: request.remoteAddress,
                facts: [("via", "route"), ("route", route.id)], only: .reveal)
            var made = try operationsCall(route, client: request.remoteAddress, audit: revealed)
            made.upstreamCaller = RouteCall.caller(identity, request)
            let call = made
            let audit = AuditLog(logger: context.logger, sink: context.logSink)
            return .later { finish in
                do throws(CloakError) {
                    try call.start(request, rest: rest, headers: headers, body: request.body) { response, outcome in
                        let steps = call.stepsRan?.names ?? ""
                        if !steps.isEmpty { call.trace?.span.set("steps", steps) }
                        for entry in revealed.recorded { audit.record(entry.event, stored: entry.stored) }
                        finish(
                            response, error: outcome.error,
                            route: Reply.RouteFacts(steps: steps, matched: outcome.matched, missed: outcome.missed))
                    }
                } catch {
                    finish(.error(error))
                }
            }
        }
        guard let vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        let caller = try identity.aliasCaller(openTokenize: context.configuration.openTokenize)
        let prepared = try PreparedSubmission(
            request, form: formName, context: context, caller: caller, keepSensitiveRaw: true, bins: vault.bins)
        // The form's values are aliased before the exchange starts: the route has no operations.
        var made = RouteCall(
            route: route, vault: vault, requestCaller: caller, responseCaller: caller, limitName: "vault.max_batch",
            trace: trace)
        made.upstreamCaller = RouteCall.caller(identity, request)
        let call = made
        return .later { finish in
            prepared.resolve(with: vault, failing: finish) { entries, _ in
                // The form's own aliases are not cards the route would forward unselected; a
                // value submitted as it is (a card field without tokenization) still is.
                let aliased = prepared.aliasedKeys
                do throws(CloakError) {
                    try call.start(
                        request, rest: rest, headers: headers, body: JSONWriter.encode(prepared.body(entries)),
                        contentType: "application/json",
                        produced: entries.filter { aliased.contains($0.key) }.map(\.value)
                    ) { response, outcome in finish(response, error: outcome.error) }
                } catch {
                    finish(.error(error))
                }
            }
        }
    }

    /// A route with `request:` or `response:` operations (or none): what they select is aliased
    /// or revealed, one vault job per kind and message. Reveal needs a token with
    /// `aliases:reveal`: an answer's revealed values reach the caller, and a request's reach the
    /// upstream on the caller's word.
    private func operationsCall(_ route: Route, client: String, audit: Outcome) throws(CloakError) -> RouteCall {
        if route.reveals { _ = try identity.require(.aliasesReveal) }
        // A file leaves the vault only for a caller that holds files:reveal as well.
        if route.revealsFiles { _ = try identity.require(.filesReveal) }
        // A route that may alias cards no selector took (`unselected_cards: redact`) aliases them
        // as its redact operations would, for this caller.
        let requestCaller =
            route.redactsRequest || route.unselectedCards == .redact
            ? try identity.aliasCaller(openTokenize: context.configuration.openTokenize) : .anonymous
        var audited = vault
        audited?.audit = audit
        return RouteCall(
            route: route, vault: audited, requestCaller: requestCaller,
            responseCaller: AliasCaller(mayReveal: false, anonymous: !identity.isCreator), limitName: "vault.max_batch",
            trace: trace,
            files: route.revealsFiles
                ? vault.map {
                    FileRevealing(
                        vault: $0, operations: route.requestOperations.filter(\.revealsFiles),
                        onRevealed: FileRevealing.recording(
                            route: route.id, tokenID: identity.token?.id ?? "-", client: client,
                            vault: $0.vault, log: AuditLog(logger: context.logger, vault: $0.vault),
                            metrics: onFileRevealed))
                } : nil,
            callerMaySeeValues: identity.token?.scopes.contains(.aliasesReveal) ?? false,
            stepsRan: route.stepNames.isEmpty ? nil : StepsRan())
    }

    /// What follows the route's path, still percent-encoded as the client sent it (checked by
    /// ``ForwardedPath``).
    static func forwardedRest(_ request: HTTPRequest, route: Route) throws(CloakError) -> String {
        let prefix = route.prefix
        guard request.rawPath.hasPrefix(prefix) else {
            throw .malformed("the route's own path must not be percent-encoded")
        }
        let rest = String(request.rawPath.dropFirst(prefix.count))
        try ForwardedPath.check(rest)
        return rest
    }

    /// The route for the request's path: the longest matching prefix, then `X-Route-Id` among
    /// routes that share it.
    func pick(_ request: HTTPRequest) throws(CloakError) -> Route {
        let matching = routes.filter { $0.matches(path: request.path) }
        let longest = matching.map(\.prefix.count).max() ?? -1
        let candidates = matching.filter { $0.prefix.count == longest }
        if let id = request.header("X-Route-Id") {
            guard UUID(uuidString: id) != nil else {
                throw CloakError(.invalidConfigurationURL, "X-Route-Id must be a route's UUID")
            }
            guard let route = candidates.first(where: { $0.id.lowercased() == id.lowercased() }) else {
                throw .notFound("the route named by X-Route-Id does not serve this path")
            }
            return route
        }
        guard let route = candidates.first else { throw .notFound("no route serves this path") }
        guard candidates.count == 1 else {
            throw .notFound("\(candidates.count) routes share this path; name one with X-Route-Id")
        }
        return route
    }
}
