import CloakCore
import CloakCrypto
import CloakHTTP
import CloakService
import CloakVault
import Foundation
import Synchronization

/// Collects log lines in memory.
package final class LogCapture: Sendable {
    private let storage = Mutex<[String]>([])

    package init() {}

    package var sink: LogSink {
        { [self] line in storage.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }
    }
    package var lines: [String] { storage.withLock { $0 } }
    package var text: String { lines.joined(separator: "\n") }
}

/// A fresh temporary folder, removed by ``remove()``.
package struct TemporaryDirectory: Sendable {
    package let path: String

    package init() {
        path = NSTemporaryDirectory() + "cloak-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The real service on the real libevent server, on 127.0.0.1 and a port the kernel picks, with
/// a real vault (SQLite file and key file in a temporary folder).
package final class TestServer: Sendable {
    package let service: CloakService
    package let server: HTTPServer
    /// The forward-proxy door, when the configuration has `egress.listen` (its CA is made in
    /// ``directory``).
    package let egress: HTTPServer?
    /// The console's listener, when started with `console: true` (`console.listen`, any port).
    package let console: HTTPServer?
    package let vault: Vault
    package let logs = LogCapture()
    package let directory = TemporaryDirectory()
    package var port: Int { server.port }

    /// The bearer tokens the test configuration grants, by scope set.
    package static let fullToken = "full-access-token"
    package static let createOnlyToken = "create-only-token"
    package static let revealOnlyToken = "reveal-only-token"
    package static let lookupOnlyToken = "lookup-only-token"
    /// `files:reveal`, `aliases:reveal` and `aliases:delete` (issue 47).
    package static let filesToken = "files-reveal-token"

    /// The repository's root, found from this file's path.
    package static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shipped `config/cloak.yaml`, so tests exercise what users run; its console listens on a
    /// port the kernel picks (tests that serve run side by side; the shipped 8082 is one port).
    package static var shippedConfiguration: String {
        let text =
            (try? String(contentsOf: repositoryRoot.appendingPathComponent("config/cloak.yaml"), encoding: .utf8)) ?? ""
        return text.replacingOccurrences(of: #"listen: "127.0.0.1:8082""#, with: #"listen: "127.0.0.1:0""#)
    }

    /// The shipped configuration with four test tokens in `auth.tokens`.
    package static var configurationWithTokens: String {
        func entry(_ id: String, _ token: String, _ scopes: String) -> String {
            let hex = Digest.sha256(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
            return "{id: \(id), sha256: \"\(hex)\", scopes: [\(scopes)]}"
        }
        let tokens = [
            entry("full", fullToken, "aliases:create, aliases:reveal, aliases:lookup, aliases:update, aliases:delete"),
            entry("creator", createOnlyToken, "aliases:create"),
            entry("revealer", revealOnlyToken, "aliases:reveal"),
            entry("looker", lookupOnlyToken, "aliases:lookup"),
            entry("files", filesToken, "files:reveal, aliases:reveal, aliases:delete"),
        ].joined(separator: ", ")
        // Rate limits far above what any test sends; the rate-limit tests set their own.
        return shippedConfiguration.replacingOccurrences(
            of: "  tokens: []", with: "  tokens: [\(tokens)]\n  # tokens: []"
        )
        .replacingOccurrences(
            of: "anonymous: {requests_per_minute: 600, burst: 60}",
            with: "anonymous: {requests_per_minute: 10000000, burst: 1000000}"
        )
        .replacingOccurrences(
            of: "token: {requests_per_minute: 6000, burst: 600}",
            with: "token: {requests_per_minute: 10000000, burst: 1000000}"
        )
        .replacingOccurrences(of: "upload_mib_per_minute: 120 ", with: "upload_mib_per_minute: 100000 ")
    }

    /// Starts a server. `environment` holds `CLOAK_*` overrides on top of the listen address and
    /// the vault paths.
    package init(
        yaml: String = TestServer.configurationWithTokens, environment: [String: String] = [:], threads: Int = 2,
        today: CalendarDate? = nil, tlsFiles: (certificate: String, key: String)? = nil, console: Bool = false
    ) throws {
        var configuration = try Self.configuration(
            yaml: yaml, environment: environment, threads: threads, in: directory)
        if let tlsFiles { configuration.server.tls = (tlsFiles.certificate, tlsFiles.key) }
        (service, vault) = try Self.service(configuration, today: today, logs: logs)
        server = try HTTPServer(
            configuration: configuration.server, deferredHandler: service.handle,
            watchdog: service.watchdog, route: { [service] in service.route($0, $1) })
        egress = try ServiceRunner.egressServer(service, host: ServiceHost(service))
        self.console = console ? try ServiceRunner.consoleServer(service, host: ServiceHost(service)) : nil
        server.start()
        egress?.start()
        self.console?.start()
    }

    /// A client of the console's listener (``console``).
    package func consoleClient(timeout: TimeInterval = 10) throws -> RawHTTPClient {
        try RawHTTPClient(port: console!.port, timeout: timeout)
    }

    /// The test configuration: `yaml` with the listen address, the vault's paths in `directory`
    /// and `environment`'s `CLOAK_*` overrides on top.
    static func configuration(
        yaml: String, environment: [String: String], threads: Int, in directory: TemporaryDirectory
    )
        throws -> ServiceConfiguration
    {
        var env = [
            "CLOAK_SERVER_LISTEN": "127.0.0.1:0", "CLOAK_SERVER_THREADS": String(threads),
            "CLOAK_VAULT_STORE": "sqlite:\(directory.path)/cloak.db",
            "CLOAK_VAULT_KEYS": "file:\(directory.path)/keys.json",
        ]
        env.merge(environment) { _, new in new }
        var configuration = try ServiceConfiguration.parse(yaml: yaml, environment: env)
        configuration.egress.caCertificate = "\(directory.path)/egress-ca.pem"
        configuration.egress.caKey = "\(directory.path)/egress-ca-key.pem"
        return configuration
    }

    /// The service on a real vault (SQLite file and key file where the configuration says).
    static func service(_ configuration: ServiceConfiguration, today: CalendarDate?, logs: LogCapture) throws
        -> (CloakService, Vault)
    {
        let vault = try VaultBootstrap.open(
            configuration.vault, environment: [:], logger: nil,
            audit: VaultBootstrap.auditSettings(configuration, node: "test", logger: nil))
        var clock: (@Sendable () -> CalendarDate)?
        if let today { clock = { today } }
        let ca =
            configuration.egress.listen == nil
            ? nil
            : try CertificateAuthority.loadOrCreate(
                certificate: configuration.egress.caCertificate, key: configuration.egress.caKey)
        return (
            CloakService(configuration: configuration, vault: vault, logSink: logs.sink, today: clock, egressCA: ca),
            vault
        )
    }

    package func client(timeout: TimeInterval = 10) throws -> RawHTTPClient {
        try RawHTTPClient(port: port, timeout: timeout)
    }

    /// The egress CA certificate's file (for clients of the forward proxy to trust).
    package var egressCAFile: String { "\(directory.path)/egress-ca.pem" }

    package func stop() {
        service.beginDraining()
        console?.shutdown()
        egress?.shutdown()
        server.shutdown()
        vault.close()
        directory.remove()
    }
}
