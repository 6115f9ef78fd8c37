import CloakCore
import CloakHTTP
import CloakJobs
import CloakVault
import Foundation
import Logging
import Synchronization

/// Runs the service until SIGTERM or SIGINT, then drains and returns; SIGHUP reloads.
package enum ServiceRunner {
    /// The signals `cloak serve` takes: block them in every thread before any starts.
    package static var signals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGHUP)
        return signals
    }

    /// Starts the HTTP server for `service` and blocks until a termination signal.
    ///
    /// The signals are blocked in every thread and taken synchronously by this one with
    /// `sigwait`, so no handler runs in signal context. On SIGHUP the configuration is loaded
    /// again with `reload` (``ServiceHost/reload(_:)``). On SIGTERM or SIGINT: readiness turns
    /// 503, the listeners close, in-flight requests finish (bounded by `drain_timeout_s`), and it
    /// returns.
    /// - Parameters:
    ///   - reload: loads the configuration file again (nil: SIGHUP is logged and ignored).
    ///   - onStopped: runs after the server has drained (flush and close the vault here).
    package static func run(
        _ service: CloakService, reload: (() throws -> ServiceConfiguration)? = nil, onStopped: () -> Void = {}
    ) throws {
        var signals = Self.signals
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let host = ServiceHost(service)
        let server = try HTTPServer(
            configuration: service.configuration.server, deferredHandler: host.handle,
            watchdog: service.watchdog, route: { host.route($0, $1) })
        let egress = try egressServer(service, host: host)
        let console = try consoleServer(service, host: host)
        // The store's API credentials before the first request, then every auth.refresh_s.
        service.credentialRefresh?.refreshAndWait()
        service.credentialRefresh?.start()
        service.state.refusals.start()
        // The BIN table before the first request, then every bins.refresh_s, each reading
        // followed by this node's heartbeat (host name and port: a restart keeps its row).
        service.binRefresh?.announce(as: "\(ProcessInfo.processInfo.hostName):\(server.port)") {
            [weak host] in host?.service.nodeStatus() ?? .null
        }
        service.binRefresh?.refreshAndWait()
        service.binRefresh?.start()
        // This node's guess windows as it left them (review V, item 5), before the first
        // request; then kept every 10 s they change, and at stop.
        let guesses = service.vault.map { vault in
            GuessWindowsKeeper(
                vault: vault, limiter: service.state.guessLimiter,
                node: vault.storeIsEmbedded ? "local" : "\(ProcessInfo.processInfo.hostName):\(server.port)",
                logger: service.logger)
        }
        guesses?.restoreAndWait()
        guesses?.start()
        // The store's free space against limits.disk_reserve_mib, once a second (review V,
        // item 4); a PostgreSQL server's data directory when it is on this machine, and the
        // store's own reports of a full disk.
        if let vault = service.vault { service.state.diskReserve.listen(to: vault) }
        service.state.diskReserve.start()
        service.watchServerDataDirectory()
        // Import jobs the store holds, one at a time (issue 60).
        let jobs = service.jobRunner(serving: { [host] in host.service })
        jobs?.start()
        server.start()
        egress?.start()
        console?.start()
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
        if let console, let listen = service.configuration.console.listen {
            service.logger.info(
                "console listening",
                metadata: [
                    "address": .string("\(listen.host):\(console.port)"),
                    "tls": .stringConvertible(service.configuration.server.tls != nil),
                ])
        }
        let pidFile = service.configuration.pidFile
        if let pidFile {
            do {
                try "\(getpid())\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
            } catch {
                service.logger.error(
                    "cannot write server.pid_file; cloak reload cannot find this process",
                    metadata: ["path": .string(pidFile), "reason": .string("\(error)")])
            }
        }
        defer { if let pidFile { unlink(pidFile) } }
        var received: Int32 = 0
        while true {
            sigwait(&signals, &received)
            guard received == SIGHUP else { break }
            if let reload {
                host.reload(reload)
            } else {
                service.logger.warning("SIGHUP ignored: this server was started without a configuration file")
            }
        }
        service.logger.info("draining", metadata: ["signal": .stringConvertible(Int(received))])
        service.beginDraining()
        console?.shutdown()
        egress?.shutdown()
        server.shutdown()
        jobs?.stop()
        guesses?.stop()
        service.state.diskReserve.stop()
        service.credentialRefresh?.stop()
        service.binRefresh?.stop()
        service.state.refusals.stop()
        onStopped()
        service.logger.info("stopped")
        LogQueue.standardOutput.flush()
    }

    /// A listener beside the main one (the console's, the egress door's): the main listener's
    /// limits on its own address, and no PROXY header (each is reached directly, by an operator
    /// or a backend next to it, never through the balancer).
    static func sideListener(_ service: CloakService, host: String, port: Int) -> HTTPServerConfiguration {
        var configuration = service.configuration.server
        configuration.host = host
        configuration.port = port
        configuration.proxyProtocol = false
        return configuration
    }

    /// The console's listener on `console.listen` (nil: no console), with the main listener's
    /// limits and TLS; never behind a balancer's PROXY header.
    package static func consoleServer(_ service: CloakService, host: ServiceHost) throws -> HTTPServer? {
        guard let listen = service.configuration.console.listen else { return nil }
        var configuration = sideListener(service, host: listen.host, port: listen.port)
        configuration.threads = 1
        let server = try HTTPServer(
            configuration: configuration, deferredHandler: host.handleConsole, watchdog: service.watchdog,
            name: "console")
        // The console checks each request's Host against the port it is bound to (port 0 in
        // the configuration: the kernel's choice).
        service.state.consolePort.store(server.port, ordering: .relaxed)
        return server
    }

    /// The forward-proxy door on `egress.listen`, with the main listener's limits (never its TLS:
    /// the door speaks plain HTTP until a tunnel's own TLS).
    package static func egressServer(_ service: CloakService, host: ServiceHost) throws -> HTTPServer? {
        guard let listen = service.configuration.egress.listen else { return nil }
        var configuration = sideListener(service, host: listen.host, port: listen.port)
        configuration.tls = nil
        return try HTTPServer(
            configuration: configuration, deferredHandler: host.handleEgress,
            tunnels: TunnelAuthorizer(
                decide: { request, name, port in host.authorizeTunnel(request, host: name, port: port) },
                malformed: { reason in .error(.malformed(reason)) }),
            watchdog: service.watchdog, name: "egress")
    }
}
