import CloakCore
import CloakHTTP
import CloakVault
import Dispatch
import Foundation
import Synchronization

/// The API listener's handler: calls the handler of the endpoint ``RoutingMiddleware`` found
/// (its caller already admitted by ``ScopeMiddleware``); 404 and 405 (with `Allow`) when none
/// matched.
struct APIHandler: RequestHandler {
    unowned let service: CloakService

    func reply(to request: RequestContext) throws(CloakError) -> Reply {
        switch request.route {
        case .notFound:
            throw .notFound("no such endpoint")
        case let .methodNotAllowed(allowed, _):
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            return .failed(
                .error(
                    CloakError(
                        .methodNotAllowed, "\(request.request.method.rawValue) is not allowed here; allowed: \(list)"),
                    headers: [("Allow", list)]))
        case let .found(endpoint, _, _):
            return try endpoint.handler(service, request)
        }
    }
}

/// The forward-proxy door's table: every request goes to ``EgressHandler``, made for the caller
/// ``AuthMiddleware`` identified from `Proxy-Authorization`.
struct ForwardDoorHandler: RequestHandler {
    unowned let service: CloakService

    func reply(to context: RequestContext) throws(CloakError) -> Reply {
        service.egressHandler(context.identity).forwardDoor(
            context.request, trace: context.trace, trustedContext: context.trustsCallerContext)
    }
}

/// What the endpoints' handlers are made of (``Endpoint/api``).
extension CloakService {
    /// `GET /readyz`: 503 while draining, when a loop stalled, or when the store does not answer.
    func readiness(_ c: RequestContext) -> Reply {
        if state.isDraining.load(ordering: .relaxed) { return .now(HealthHandler.draining) }
        let stalled = watchdog.stalledLoops(
            now: LoopWatchdog.now(), limit: UInt64(configuration.loopStallSeconds * 1e9))
        if !stalled.isEmpty {
            metrics.loopStalled()
            return .now(HealthHandler.loopStalled(stalled))
        }
        let ready =
            state.diskReserve.isBelow(configuration.limits.diskReserveMiB)
            ? HealthHandler.readyBelowReserve : HealthHandler.ready
        guard let client = vaultClient(c.request) else { return .now(ready) }
        return .later { finish in
            client.ping { result in
                if case .success = result { finish(ready) } else { finish(HealthHandler.storeDown) }
            }
        }
    }

    /// `GET /metrics`: the Prometheus text exposition.
    func metricsExposition() -> HTTPResponse {
        metrics.logLinesDropped(LogQueue.standardOutput.dropped)
        metrics.clientAddressRefusals(ConnectionNotices.shared.counts)
        metrics.diskReserve(
            freeBytes: state.diskReserve.current.freeBytes,
            below: state.diskReserve.isBelow(configuration.limits.diskReserveMiB))
        let bins = binRefresh?.current?.document
        metrics.binTable(
            version: bins?.version, digest: bins?.shortDigest, importedAt: bins?.importedAt,
            now: Int64(Date().timeIntervalSince1970))
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")] + HTTPResponse.noCacheHeaders,
            body: metrics.exposition())
    }

    func forms(_ c: RequestContext) throws(CloakError) -> FormTokenizeHandler {
        var handler = FormTokenizeHandler(
            context: context, vault: try requireVault(c.request, c.identity, trace: c.trace), identity: c.identity)
        handler.admitUpload = {
            [
                uploads = state.uploads, limits = context.configuration.limits, metrics,
                client = c.request.remoteAddress,
                token = c.identity.token?.id
            ] declared throws(CloakError) in
            try uploads.admit(client: client, token: token, declaredBytes: declared, limits: limits) {
                metrics.rateLimited("upload")
            }
        }
        handler.onFileOutcome = { [metrics, outcome = c.outcome, vault = handler.vault] result in
            switch result {
            case .stored(let alias, let bytes):
                metrics.fileUploaded("stored", bytes: bytes)
                outcome?.alias(vault.vault.auditReference(alias), .ok, facts: [("bytes", String(bytes))])
            case .refused:
                metrics.fileUploaded("refused")
                outcome?.alias(nil, .refused)
            case .failed:
                metrics.fileUploaded("failed")
                outcome?.alias(nil, .error)
            }
        }
        return handler
    }

    func bins(_ c: RequestContext) -> BinsHandler {
        BinsHandler(
            table: binRefresh?.current?.table, vault: vaultClient(c.request, c.identity, trace: c.trace),
            outcome: c.outcome, mayReveal: c.identity.token?.scopes.contains(.aliasesReveal) ?? false)
    }

    func fileReveal(_ c: RequestContext) throws(CloakError) -> FileRevealHandler {
        FileRevealHandler(
            vault: try requireVault(c.request, c.identity, trace: c.trace), outcome: c.outcome,
            onRevealed: { [metrics] bytes in metrics.fileRevealed(bytes: bytes) })
    }

    func vaultAPI(_ c: RequestContext) throws(CloakError) -> VaultAPIHandler {
        VaultAPIHandler(
            vault: try requireVault(c.request, c.identity, trace: c.trace, audit: c.outcome), identity: c.identity,
            openTokenize: configuration.openTokenize, outcome: c.outcome)
    }

    func adminTokens(_ c: RequestContext) throws(CloakError) -> AdminTokensHandler {
        AdminTokensHandler(
            vault: try requireVault(c.request), identity: c.identity, directory: auth.directory,
            refresh: credentialRefresh, outcome: c.outcome, now: Int64(Date().timeIntervalSince1970),
            defaultRequestsPerMinute: configuration.limits.token.requestsPerMinute,
            defaultBucketValuesPerHour: configuration.limits.bucketValuesPerHour)
    }

    func adminBins(_ c: RequestContext) throws(CloakError) -> AdminBinsHandler {
        guard let vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        return AdminBinsHandler(
            vault: vault, refreshSeconds: configuration.binsRefreshSeconds, outcome: c.outcome,
            now: Int64(Date().timeIntervalSince1970))
    }

    func elementsReveal(_ c: RequestContext) throws(CloakError) -> ElementsRevealHandler {
        let elements = ElementsHandler(context: context)
        // Each path checks its own switch (web frames, apps, minting) before anything else.
        guard elements.settings.mintsSessions else { throw .notFound("no such endpoint") }
        guard let sessionKey = elementsSessionKey else {
            throw CloakError(.vaultUnavailable, "this server runs without a vault")
        }
        return ElementsRevealHandler(
            elements: elements, vault: try requireVault(c.request, trace: c.trace),
            vaultFor: { [self, request = c.request, trace = c.trace] identity in
                vaultClient(request, identity, trace: trace)
            },
            sessionKey: sessionKey, identity: c.identity, client: c.request.remoteAddress, outcome: c.outcome,
            tokens: auth.directory)
    }
}
