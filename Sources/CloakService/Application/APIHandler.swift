import CloakCore
import CloakHTTP
import CloakVault
import Dispatch
import Foundation

/// The API listener's handler: answers the endpoint ``RoutingMiddleware`` found, once the
/// caller was identified and counted; 404 and 405 (with `Allow`) when none matched.
struct APIHandler: RequestHandler {
    unowned let service: CloakService

    func reply(to request: RequestContext) throws(CloakError) -> Reply {
        switch request.route {
        case .notFound:
            throw .notFound("no such endpoint")
        case let .methodNotAllowed(allowed, _):
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            return .now(
                .error(
                    CloakError(
                        .methodNotAllowed, "\(request.request.method.rawValue) is not allowed here; allowed: \(list)"),
                    headers: [("Allow", list)]))
        case let .found(endpoint, _, _):
            return try reply(endpoint, request)
        }
    }

    private func reply(_ endpoint: Endpoint, _ c: RequestContext) throws(CloakError) -> Reply {
        switch endpoint {
        case .healthz:
            return .now(HealthHandler.healthy)
        case .metrics:
            let metrics = service.metrics
            metrics.logLinesDropped(LogQueue.standardOutput.dropped)
            metrics.clientAddressRefusals(ConnectionNotices.shared.counts)
            return .now(
                HTTPResponse(
                    status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")],
                    body: metrics.exposition()))
        case .readyz:
            if service.isDraining.load(ordering: .relaxed) { return .now(HealthHandler.draining) }
            let stalled = service.watchdog.stalledLoops(
                now: DispatchTime.now().uptimeNanoseconds,
                limit: UInt64(service.configuration.loopStallSeconds * 1e9))
            if !stalled.isEmpty {
                service.metrics.loopStalled()
                return .now(HealthHandler.loopStalled(stalled))
            }
            guard let client = service.vaultClient(c.request) else { return .now(HealthHandler.ready) }
            return .later { finish in
                client.ping { result in
                    if case .success = result { finish(HealthHandler.ready) } else { finish(HealthHandler.storeDown) }
                }
            }
        case .validate:
            return .now(try ValidateHandler(context: service.context).handle(c.request, form: c.parameter("form")))
        case .formTokens, .formAliases, .formSend:
            return try FormTokenizeHandler(
                context: service.context, vault: try service.requireVault(c.request, c.identity), identity: c.identity
            )
            .handle(
                c.request, form: c.parameter("form"), requiresToken: endpoint == .formAliases,
                answer: endpoint == .formSend ? .mappedBody : .flatResult)
        case .createTokens, .createAliases:
            return try vaultAPI(c).create(c.request, requiresToken: endpoint == .createAliases)
        case .revealMany:
            return try vaultAPI(c).revealMany(c.request)
        case .reveal:
            return try vaultAPI(c).reveal(c.request, alias: c.parameter("alias"))
        case .update:
            return try vaultAPI(c).update(c.request, alias: c.parameter("alias"))
        case .delete:
            return try vaultAPI(c).delete(c.request, alias: c.parameter("alias"))
        case .keep:
            return try vaultAPI(c).keep(c.request)
        case .lookup:
            return try vaultAPI(c).lookup(c.request)
        case .egress:
            // Whatever spelling of the path reached it (`//egress/…`), the egress door's caller is
            // only ever Proxy-Authorization.
            return service.egressHandler(c.identity).transformDoor(c.request, routeID: c.parameter("route"))
        case .elementsAsset:
            return .now(try ElementsHandler(context: service.context).asset(c.request, name: c.parameter("asset")))
        case .elementsSchema:
            return .now(try ElementsHandler(context: service.context).schema(c.request, form: c.parameter("form")))
        case .elementsSession:
            return .now(try elementsReveal(c).createSession(c.request, now: Int64(Date().timeIntervalSince1970)))
        case .elementsReveal:
            return try elementsReveal(c).reveal(c.request, now: Int64(Date().timeIntervalSince1970))
        case .proxy:
            return try ProxyHandler(
                context: service.context, vault: service.vaultClient(c.request, c.identity),
                routes: service.proxyRoutes,
                identity: c.identity
            ).handle(c.request)
        }
    }

    private func elementsReveal(_ c: RequestContext) throws(CloakError) -> ElementsRevealHandler {
        let elements = ElementsHandler(context: service.context)
        try elements.requireEnabled()
        guard let sessionKey = service.elementsSessionKey else {
            throw CloakError(.vaultUnavailable, "this server runs without a vault")
        }
        return ElementsRevealHandler(
            elements: elements, vault: try service.requireVault(c.request), sessionKey: sessionKey,
            identity: c.identity, client: c.request.remoteAddress)
    }

    private func vaultAPI(_ c: RequestContext) throws(CloakError) -> VaultAPIHandler {
        VaultAPIHandler(
            vault: try service.requireVault(c.request, c.identity), identity: c.identity,
            openTokenize: service.configuration.openTokenize, logger: service.context.logger,
            client: c.request.remoteAddress)
    }
}

/// The forward-proxy door's handler: the request goes to the egress route its target names.
struct ForwardDoorHandler: RequestHandler {
    unowned let service: CloakService

    func reply(to context: RequestContext) throws(CloakError) -> Reply {
        service.egressHandler(context.identity).forwardDoor(context.request)
    }
}
