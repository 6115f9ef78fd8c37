import CloakCore
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Synchronization

/// The API listener's endpoint table: hands the request to the handler of the endpoint
/// ``RoutingMiddleware`` found (made for the caller ``AuthMiddleware`` identified); 404 and
/// 405 (with `Allow`) when none matched. Health, readiness and metrics are answered here.
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
            return try ValidateHandler(context: service.context).reply(to: c)
        case .formTokens, .formAliases, .formSend:
            return try FormTokenizeHandler(
                context: service.context, vault: try service.requireVault(c.request, c.identity), identity: c.identity
            ).reply(to: c)
        case .createTokens, .createAliases, .revealMany, .reveal, .update, .delete, .keep, .lookup:
            return try vaultAPI(c).reply(to: c)
        case .egress:
            return try service.egressHandler(c.identity).reply(to: c)
        case .elementsAsset, .elementsSchema:
            return try ElementsHandler(context: service.context).reply(to: c)
        case .elementsSession, .elementsReveal, .elementsNativeReveal:
            return try elementsReveal(c).reply(to: c)
        case .proxy:
            return try ProxyHandler(
                context: service.context, vault: service.vaultClient(c.request, c.identity),
                routes: service.configuration.routes, identity: c.identity
            ).reply(to: c)
        }
    }

    private func elementsReveal(_ c: RequestContext) throws(CloakError) -> ElementsRevealHandler {
        let elements = ElementsHandler(context: service.context)
        // Each path checks its own switch (web frames, apps, minting) before anything else.
        guard elements.settings.mintsSessions else { throw .notFound("no such endpoint") }
        guard let sessionKey = service.elementsSessionKey else {
            throw CloakError(.vaultUnavailable, "this server runs without a vault")
        }
        return ElementsRevealHandler(
            elements: elements, vault: try service.requireVault(c.request),
            vaultFor: { [service, request = c.request] identity in service.vaultClient(request, identity) },
            sessionKey: sessionKey,
            identity: c.identity, client: c.request.remoteAddress)
    }

    private func vaultAPI(_ c: RequestContext) throws(CloakError) -> VaultAPIHandler {
        VaultAPIHandler(
            vault: try service.requireVault(c.request, c.identity), identity: c.identity,
            openTokenize: service.configuration.openTokenize, logger: service.context.logger,
            client: c.request.remoteAddress)
    }
}

/// The forward-proxy door's table: every request goes to ``EgressHandler``, made for the caller
/// ``AuthMiddleware`` identified from `Proxy-Authorization`.
struct ForwardDoorHandler: RequestHandler {
    unowned let service: CloakService

    func reply(to context: RequestContext) throws(CloakError) -> Reply {
        try service.egressHandler(context.identity).reply(to: context)
    }
}
