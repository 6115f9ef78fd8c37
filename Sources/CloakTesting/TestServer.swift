import CloakCore
import CloakHTTP
import CloakService
import Foundation
import Synchronization

/// Collects log lines in memory.
public final class LogCapture: Sendable {
    private let storage = Mutex<[String]>([])

    public init() {}

    public var sink: LogSink { { [self] line in storage.withLock { $0.append(line) } } }
    public var lines: [String] { storage.withLock { $0 } }
    public var text: String { lines.joined(separator: "\n") }
}

/// The real service on the real libevent server, on 127.0.0.1 and a port the kernel picks.
public final class TestServer: Sendable {
    public let service: CloakService
    public let server: HTTPServer
    public let logs = LogCapture()
    public var port: Int { server.port }

    /// The repository's root, found from this file's path.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shipped `config/cloak.yaml`, so tests exercise what users run.
    public static var shippedConfiguration: String {
        (try? String(contentsOf: repositoryRoot.appendingPathComponent("config/cloak.yaml"), encoding: .utf8)) ?? ""
    }

    /// Starts a server. `environment` holds `CLOAK_*` overrides on top of the listen address.
    public init(
        yaml: String = TestServer.shippedConfiguration, environment: [String: String] = [:], threads: Int = 2,
        today: CalendarDate? = nil
    ) throws {
        var env = ["CLOAK_SERVER_LISTEN": "127.0.0.1:0", "CLOAK_SERVER_THREADS": String(threads)]
        env.merge(environment) { _, new in new }
        let configuration = try ServiceConfiguration.parse(yaml: yaml, environment: env)
        var clock: (@Sendable () -> CalendarDate)?
        if let today { clock = { today } }
        service = CloakService(configuration: configuration, logSink: logs.sink, today: clock)
        server = try HTTPServer(configuration: configuration.server, handler: service.handle)
        server.start()
    }

    public func client(timeout: TimeInterval = 10) throws -> RawHTTPClient {
        try RawHTTPClient(port: port, timeout: timeout)
    }

    public func stop() {
        service.beginDraining()
        server.shutdown()
    }
}
