import CloakCore
import CloakHTTP
import CloakVault
import Foundation
import Logging

/// The two egress doors. A backend sends its request, aliases inside, through Cloak to its
/// payment provider; Cloak reveals the selected aliases on the wire and applies the route's
/// response operations to the answer.
///
/// - Transform door: `ANY /egress/{route id}/{path…}` on the main listener.
/// - Forward-proxy door: requests inside a CONNECT tunnel of `egress.listen`, or absolute-form
///   requests (`POST http://host/path`) there.
///
/// Deny by default: no credentials 407 (1300); a token without `egress:<id>` or `egress:*`, a
/// host, path or method no route allows: 403 (1301), nothing forwarded.
struct EgressHandler: Sendable {
    let context: ServiceContext
    let vault: Vault?
    let settings: EgressSettings
    let identity: Identity
    let metrics: EgressMetrics
    /// Recognises a Cloak token in `Authorization`, which never goes upstream.
    let authenticator: Authenticator
    /// The caller's limits on aliasing (``CreateAdmission``).
    let admission: CreateAdmission?
    /// The caller's guess limit for the aliases a route reveals (``VaultClient/revealGuessing(_:completion:)``).
    var lookupValuesPerHour: Int? = nil
    /// The node's BIN table: a card a route redacts keeps its attributes.
    var bins: BinTable? = nil

    /// The 407 every door answers without valid credentials: a 1300 error, answered with 407 and
    /// `Proxy-Authenticate` (its own status would be 401).
    static func proxyAuthenticationRequired(_ identity: Identity) -> Reply.Failure {
        let error = CloakError(
            .invalidAccessToken,
            identity.rejected
                ? "the Proxy-Authorization credentials are not valid"
                : "credentials are required: Proxy-Authorization: Basic base64(<token id>:<token>) or Bearer <token>")
        return Reply.Failure(
            error: error,
            response: .json(
                407, JSONWriter.encode(error.body), headers: [("Proxy-Authenticate", #"Basic realm="cloak""#)]))
    }

    /// `ANY /egress/{route}/{path…}`.
    /// `trustedContext`: the caller's trace context is taken (``RequestContext/trustsCallerContext``),
    /// so a route with `forward_baggage` passes its `baggage`.
    func transformDoor(
        _ request: HTTPRequest, routeID: String, trace: RequestTrace? = nil, trustedContext: Bool = false
    ) -> Reply {
        guard identity.token != nil else { return .failed(Self.proxyAuthenticationRequired(identity)) }
        // The scope is checked before the route is looked up: a token cannot probe route ids.
        guard identity.mayUseEgress(routeID) else {
            return refuse(CloakError(.forbidden, "the token may not use this egress route"), route: nil)
        }
        guard let route = settings.route(routeID) else {
            return refuse(.notFound("no such egress route"), route: nil)
        }
        let prefix = "/egress/" + routeID
        guard request.rawPath.hasPrefix(prefix) else {
            return refuse(.malformed("the route id must not be percent-encoded"), route: route.id)
        }
        var path = String(request.rawPath.dropFirst(prefix.count))
        if path.isEmpty { path = "/" }
        return forward(request, route: route, path: path, trace: trace, trustedContext: trustedContext)
    }

    /// A request on the forward-proxy door.
    func forwardDoor(_ request: HTTPRequest, trace: RequestTrace? = nil, trustedContext: Bool = false) -> Reply {
        guard let target = request.proxyTarget else {
            return refuse(
                .malformed(
                    "this is a forward proxy: open a tunnel with CONNECT host:port, or send an absolute-form http:// URL"
                ), route: nil)
        }
        // An https URL in absolute form would cross to Cloak in clear text (credentials, the
        // provider's key, the body): https goes through a CONNECT tunnel only.
        guard target.tunnelGrant != nil || target.scheme == "http" else {
            return refuse(.malformed("send https requests through a CONNECT tunnel, not in absolute form"), route: nil)
        }
        guard identity.token != nil else { return .failed(Self.proxyAuthenticationRequired(identity)) }
        let host = target.host.lowercased()
        let candidates = settings.routes.filter { $0.goes(to: target.scheme, host: host, port: target.port) }
        // One text whether no route goes to the host or none of its routes fits: a token must not
        // learn which hosts have routes.
        guard
            let route = candidates.first(where: {
                identity.mayUseEgress($0.id) && $0.allows(method: request.method.rawValue, path: request.rawPath)
            })
        else {
            return refuse(CloakError(.forbidden, Self.noRoute), route: nil)
        }
        return forward(request, route: route, path: request.rawPath, trace: trace, trustedContext: trustedContext)
    }

    /// The forward door's one refusal text for a request no route of the token's fits.
    static let noRoute = "no egress route this token may use allows this request"

    /// Whether a CONNECT to `host:port` may open a tunnel: some route goes there and the token
    /// may use it.
    func mayTunnel(host: String, port: Int) -> Bool {
        let host = host.lowercased()
        return settings.routes.contains { $0.goes(to: "https", host: host, port: port) && identity.mayUseEgress($0.id) }
    }

    private func forward(
        _ request: HTTPRequest, route: Route, path: String, trace: RequestTrace?, trustedContext: Bool
    ) -> Reply {
        let start = DispatchTime.now().uptimeNanoseconds
        guard route.allows(method: request.method.rawValue, path: path) else {
            return refuse(
                CloakError(.forbidden, "the route does not allow \(request.method.rawValue) on this path"),
                route: route.id)
        }
        do throws(CloakError) {
            try ForwardedPath.check(path)
            // Values revealed into the answer reach the caller: that needs aliases:reveal, as on
            // inbound routes (egress:<id> alone grants revealing to the route's upstream).
            if route.responseOperations.contains(where: { $0.action == .reveal }) {
                _ = try identity.require(.aliasesReveal)
            }
            // A file leaves the vault only for a caller that holds files:reveal as well.
            if route.revealsFiles { _ = try identity.require(.filesReveal) }
        } catch { return refuse(error, route: route.id) }
        // The provider's key goes upstream in Authorization; a Cloak token there is a client's
        // mistake that would hand the vault's credential to a third party: refused, never sent.
        if request.headers.contains(where: {
            $0.name.caseInsensitiveEquals("Authorization") && authenticator.holdsToken($0.value)
        }) {
            return refuse(
                .malformed(
                    "the Authorization header holds a Cloak token; Cloak credentials go in Proxy-Authorization "
                        + "only and are never forwarded"), route: route.id)
        }
        // Authorization (the provider's API key) goes upstream untouched; Proxy-Authorization is
        // hop-by-hop and never does. Deterministic aliases for the route's redactions (an answer's
        // card comes back as its stored alias), under the token's admission: per-value charge and
        // bucket limit.
        let caller = AliasCaller(mayReveal: false, anonymous: false)
        // Each alias revealed for the provider is audited in the reveal's own transaction: its
        // event is durable before the value leaves (``VaultAuditing``).
        let revealed = Outcome(
            action: .reveal, tokenID: identity.token?.id ?? "-", client: request.remoteAddress,
            facts: [("via", "egress"), ("route", route.id)], only: .reveal)
        let client = vault.map {
            VaultClient(
                vault: $0, loop: request.loop, admission: admission, lookupValuesPerHour: lookupValuesPerHour,
                onUnavailable: CloakService.logUnavailable(context.logger), trace: trace, bins: bins,
                audit: revealed)
        }
        var made = RouteCall(
            route: route, vault: client, requestCaller: caller, responseCaller: caller,
            limitName: "max_aliases of route \(route.id) (and vault.max_batch)", trace: trace,
            files: route.revealsFiles
                ? client.map {
                    FileRevealing(
                        vault: $0, operations: route.requestOperations.filter(\.revealsFiles),
                        onRevealed: FileRevealing.recording(
                            route: route.id, tokenID: identity.token?.id ?? "-", client: request.remoteAddress,
                            vault: $0.vault, log: AuditLog(logger: context.logger, vault: $0.vault),
                            metrics: { [metrics = self.metrics] in metrics.fileRevealed(bytes: $0) }))
                } : nil,
            callerMaySeeValues: identity.token?.scopes.contains(.aliasesReveal) ?? false,
            stepsRan: route.stepNames.isEmpty ? nil : StepsRan())
        made.upstreamCaller = RouteCall.caller(identity, request)
        let call = made
        let headers = route.forwardedHeaders(request.headers, keepAuthorization: true, trustedContext: trustedContext)
        let tokenID = identity.token?.id ?? "-"
        let audit = AuditLog(logger: context.logger, sink: context.logSink)
        let sink = context.logSink
        let metrics = self.metrics
        return .later { finish in
            do throws(CloakError) {
                try call.start(request, rest: path, headers: headers, body: request.body) { response, outcome in
                    let micros = (DispatchTime.now().uptimeNanoseconds - start) / 1000
                    // One line per call, fields in key order (``LogLine``): never a value, a
                    // header or the path.
                    var line = LogLine("egress")
                    line.field("duration_us", Int(micros))
                    line.field("redacted", outcome.redacted)
                    line.field("revealed", outcome.revealed)
                    line.field("route", route.id)
                    // The request selectors as configured (issue 57): a reveal whose path
                    // misses shows here, not only as "revealed":0.
                    line.field("selectors_matched", outcome.matched.joined(separator: ","))
                    line.field("selectors_missed", outcome.missed.joined(separator: ","))
                    line.field("status", response.status)
                    let steps = call.stepsRan?.names ?? ""
                    if !steps.isEmpty {
                        line.field("steps", steps)
                        trace?.span.set("steps", steps)
                    }
                    line.field("token_id", tokenID)
                    line.field("upstream_status", outcome.upstreamStatus.map(String.init) ?? "-")
                    line.write(to: sink)
                    metrics.record(route: route.id, status: response.status, revealed: outcome.revealed)
                    for entry in revealed.recorded { audit.record(entry.event, stored: entry.stored) }
                    finish(
                        response, error: outcome.error,
                        route: Reply.RouteFacts(steps: steps, matched: outcome.matched, missed: outcome.missed))
                }
            } catch {
                metrics.record(route: route.id, status: error.code.httpStatus, revealed: 0)
                finish(.error(error))
            }
        }
    }

    private func refuse(_ error: CloakError, route: String?) -> Reply {
        metrics.record(route: route ?? "-", status: error.code.httpStatus, revealed: 0)
        return .failed(.error(error))
    }
}
