import ArgumentParser
import CloakHTTP
import CloakService
import Foundation

struct Healthcheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "GET /readyz of the configured listener: exit 0 when it answers 200, 1 otherwise (container health checks)."
    )

    @OptionGroup var options: ConfigOption
    @Option(help: "Probe this URL instead (http://HOST:PORT/PATH or https://…).") var url: String?

    func run() throws {
        var host: String, port: Int, path = "/readyz", tls: Bool
        if let url {
            guard let parsed = UpstreamRequest.parse(url: url) else {
                throw ValidationError("expected http(s)://HOST:PORT/PATH")
            }
            (host, port, path, tls) = (parsed.host, parsed.port, parsed.path, parsed.scheme == .https)
        } else {
            let configuration = try options.load()
            (host, port, tls) = (configuration.server.host, configuration.server.port, configuration.server.tls != nil)
        }
        // A listener on every address answers on loopback.
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        guard HealthProbe.status(host: host, port: port, path: path, tls: tls) == 200 else { throw ExitCode(1) }
    }
}
