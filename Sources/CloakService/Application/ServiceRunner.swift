import CloakCore
import CloakHTTP
import Foundation
import Logging

/// Runs the service until SIGTERM or SIGINT, then drains and returns.
package enum ServiceRunner {
    /// Starts the HTTP server for `service` and blocks until a termination signal.
    ///
    /// The signals are blocked in every thread and taken synchronously by this one with
    /// `sigwait`, so no handler runs in signal context. On a signal: readiness turns 503, the
    /// listeners close, in-flight requests finish (bounded by `drain_timeout_s`), and it returns.
    /// - Parameter onStopped: runs after the server has drained (flush and close the vault here).
    package static func run(_ service: CloakService, onStopped: () -> Void = {}) throws {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let server = try HTTPServer(
            configuration: service.configuration.server, deferredHandler: service.handle,
            watchdog: service.watchdog)
        let egress = try egressServer(service)
        // The store's API credentials before the first request, then every auth.refresh_s.
        service.credentialRefresh?.refreshAndWait()
        service.credentialRefresh?.start()
        server.start()
        egress?.start()
        let c = service.configuration.server
        service.logger.info(
            "listening",
            metadata: [
                "address": .string("\(c.host):\(server.port)"), "threads": .stringConvertible(server.threadCount),
                "forms": .string(service.configuration.forms.keys.sorted().joined(separator: ",")),
                "max_connections": .stringConvertible(server.configuration.maxConnections),
            ])
        if let egress, let listen = service.configuration.egress.listen {
            service.logger.info(
                "egress proxy listening",
                metadata: [
                    "address": .string("\(listen.host):\(egress.port)"),
                    "routes": .string(service.configuration.egress.routes.map(\.id).joined(separator: ",")),
                ])
        }
        var received: Int32 = 0
        sigwait(&signals, &received)
        service.logger.info("draining", metadata: ["signal": .stringConvertible(Int(received))])
        service.beginDraining()
        egress?.shutdown()
        server.shutdown()
        service.credentialRefresh?.stop()
        onStopped()
        service.logger.info("stopped")
        LogQueue.standardOutput.flush()
    }

    /// The forward-proxy door on `egress.listen`, with the main listener's limits (never its TLS:
    /// the door speaks plain HTTP until a tunnel's own TLS).
    package static func egressServer(_ service: CloakService) throws -> HTTPServer? {
        guard let listen = service.configuration.egress.listen else { return nil }
        var configuration = service.configuration.server
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.tls = nil
        // The door is the backend's, next to it: no balancer's PROXY header in front.
        configuration.proxyProtocol = false
        return try HTTPServer(
            configuration: configuration, deferredHandler: service.handleEgress,
            tunnels: TunnelAuthorizer(
                decide: { request, host, port in service.authorizeTunnel(request, host: host, port: port) },
                malformed: { reason in .error(.malformed(reason)) }),
            watchdog: service.watchdog, name: "egress")
    }
}
