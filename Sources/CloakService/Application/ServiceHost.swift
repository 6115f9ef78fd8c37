import CloakHTTP
import Logging
import Synchronization

/// Serves whichever ``CloakService`` is current and replaces it on a reload (`SIGHUP`, `cloak
/// reload`): a request is handled from start to answer by the service it started under, so
/// requests in flight finish under the configuration they started with; those that start after
/// a reload see the new one. What outlives a reload (the vault, the limits' counts, metrics) is
/// the services' shared ``ServiceState``.
package final class ServiceHost: Sendable {
    private let current: Mutex<CloakService>

    package init(_ service: CloakService) { current = Mutex(service) }

    /// A request's endpoint, and how its body is read (``CloakService/route(_:_:)``); the
    /// service is looked up only for a form's upload.
    package func route(_ method: HTTPMethod, _ rawPath: String) -> HeadRoute {
        CloakService.route(method, rawPath) { service }
    }

    /// The service requests start under now.
    package var service: CloakService { current.withLock { $0 } }

    /// What a reload did.
    package enum Outcome: Equatable, Sendable {
        /// The new configuration serves; `ignored` lists the settings that need a restart and
        /// were left as they are.
        case applied(ignored: [String])
        /// The file did not load (its problems); the running configuration stays, whole.
        case refused([String])
    }

    /// Loads the configuration again and, when it is valid, serves it from the next request on.
    /// Settings that only a restart can change (listen address, threads, TLS, store, keys, the
    /// egress door's listener and CA, `console`, `auth.refresh_s`) keep their running values and are
    /// logged as ignored.
    @discardableResult
    package func reload(_ load: () throws -> ServiceConfiguration) -> Outcome {
        let running = service
        let logger = running.logger
        var next: ServiceConfiguration
        do {
            next = try load()
        } catch {
            let problems = "\(error)".split(separator: "\n").map(String.init)
            running.metrics.configReloaded("refused")
            logger.error(
                "configuration reload refused; the running configuration is kept",
                metadata: ["problems": .string(problems.joined(separator: "; "))])
            return .refused(problems)
        }
        let ignored = Self.needsRestart(running.configuration, next)
        // Keep what only a restart changes, so the new service describes what really runs.
        next.server = running.configuration.server
        next.vault = running.configuration.vault
        next.egress.listen = running.configuration.egress.listen
        next.console = running.configuration.console
        next.egress.caCertificate = running.configuration.egress.caCertificate
        next.egress.caKey = running.configuration.egress.caKey
        next.authRefreshSeconds = running.configuration.authRefreshSeconds
        next.pidFile = running.configuration.pidFile
        next.traces = running.configuration.traces

        let service = CloakService(configuration: next, state: running.state)
        for id in running.state.directory.replaceYAML(next.auth) {
            logger.error(
                "an API credential in the store has the id of a token in auth.tokens; the store's is refused",
                metadata: ["token_id": .string(id)])
        }
        current.withLock { $0 = service }
        running.metrics.configReloaded("applied")
        for setting in ignored {
            logger.warning(
                "configuration reload: this setting changed but needs a restart; the running value is kept",
                metadata: ["setting": .string(setting)])
        }
        logger.notice(
            "configuration reloaded",
            metadata: [
                "forms": .string(next.forms.keys.sorted().joined(separator: ",")),
                "routes": .stringConvertible(next.routes.count),
                "egress_routes": .stringConvertible(next.egress.routes.count),
                "tokens": .stringConvertible(next.auth.count),
            ])
        return .applied(ignored: ignored)
    }

    /// The settings of `next` that differ from `running` and need a restart.
    static func needsRestart(_ running: ServiceConfiguration, _ next: ServiceConfiguration) -> [String] {
        var changed: [String] = []
        // Compared by their whole description: never logged (a TLS key path is no secret, but
        // the comparison needs no more than equal or not).
        if String(describing: running.server) != String(describing: next.server) { changed.append("server") }
        if String(describing: running.vault) != String(describing: next.vault) { changed.append("vault") }
        if running.egress.listen?.host != next.egress.listen?.host
            || running.egress.listen?.port != next.egress.listen?.port
        {
            changed.append("egress.listen")
        }
        if running.egress.caCertificate != next.egress.caCertificate || running.egress.caKey != next.egress.caKey {
            changed.append("egress.ca")
        }
        if running.console != next.console { changed.append("console") }
        if running.authRefreshSeconds != next.authRefreshSeconds { changed.append("auth.refresh_s") }
        if running.pidFile != next.pidFile { changed.append("server.pid_file") }
        if running.traces != next.traces { changed.append("telemetry") }
        return changed
    }

    // The server's entry points, each on the current service.

    package func handle(_ request: HTTPRequest, _ responder: HTTPResponder) { service.handle(request, responder) }

    package func handleEgress(_ request: HTTPRequest, _ responder: HTTPResponder) {
        service.handleEgress(request, responder)
    }

    package func handleConsole(_ request: HTTPRequest, _ responder: HTTPResponder) {
        service.handleConsole(request, responder)
    }

    package func authorizeTunnel(_ connect: HTTPRequest, host: String, port: Int) -> TunnelDecision {
        service.authorizeTunnel(connect, host: host, port: port)
    }
}
