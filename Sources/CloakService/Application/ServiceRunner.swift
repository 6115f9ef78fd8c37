import CloakHTTP
import Foundation
import Logging

/// Runs the service until SIGTERM or SIGINT, then drains and returns.
public enum ServiceRunner {
    /// Starts the HTTP server for `service` and blocks until a termination signal.
    ///
    /// The signals are blocked in every thread and taken synchronously by this one with
    /// `sigwait`, so no handler runs in signal context. On a signal: readiness turns 503, the
    /// listeners close, in-flight requests finish (bounded by `drain_timeout_s`), and it returns.
    /// - Parameter onStopped: runs after the server has drained (flush and close the vault here).
    public static func run(_ service: CloakService, onStopped: () -> Void = {}) throws {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let server = try HTTPServer(configuration: service.configuration.server, deferredHandler: service.handle)
        server.start()
        let c = service.configuration.server
        service.logger.info("listening", metadata: [
            "address": .string("\(c.host):\(server.port)"), "threads": .stringConvertible(server.threadCount),
            "forms": .string(service.configuration.forms.keys.sorted().joined(separator: ",")),
            "max_connections": .stringConvertible(server.configuration.maxConnections),
        ])
        var received: Int32 = 0
        sigwait(&signals, &received)
        service.logger.info("draining", metadata: ["signal": .stringConvertible(Int(received))])
        service.beginDraining()
        server.shutdown()
        onStopped()
        service.logger.info("stopped")
        LogQueue.standardOutput.flush()
    }
}
