import CloakCrypto
import Foundation

/// A `cloak serve` process, as an operator runs it: the built executable, a configuration file,
/// `CLOAK_*` variables, a free loopback port. For multi-node tests on one PostgreSQL database.
package final class CloakNode: @unchecked Sendable {
    package let port: Int
    private let process: Process
    package let output: String
    /// The node's configuration file and the variables it runs with (``command(_:)`` uses both).
    package let configPath: String
    package let variables: [String: String]
    private let binary: URL
    /// The log file's handle, kept open for the process's life (closed once, by its deinit).
    private let logHandle: FileHandle

    /// A bearer token with every alias scope (the nodes' configuration lists it).
    package static let token = "multi-node-token"
    /// One master key for every node (`CLOAK_MASTER_KEY`): nodes share keys.
    package static let masterKey = String(repeating: "0a", count: 32)

    /// Starts a node on `store` and waits until `/readyz` answers 200.
    /// - Parameters:
    ///   - tokenID: the id the configuration gives ``token``.
    ///   - scopes: the scopes it gives it.
    ///   - secret: the token's secret the configuration lists (its SHA-256).
    ///   - configure: changes the YAML before the node reads it (routes, telemetry).
    ///   - release: another build's checkout (a previous release's worktree, its release binary
    ///     built): the node runs that binary on that checkout's shipped configuration.
    package init(
        store: String, directory: String, environment: [String: String] = [:], tokenID: String = "nodes",
        scopes: String = "aliases:create, aliases:reveal, aliases:lookup, aliases:update, aliases:delete",
        secret: String = CloakNode.token, configure: (String) -> String = { $0 },
        ready: ((Int) -> Bool)? = nil, release: URL? = nil
    ) throws {
        let hex = Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
        let config = "\(directory)/node-\(UUID().uuidString).yaml"
        let shipped = try release.map {
            try String(contentsOf: $0.appendingPathComponent("config/cloak.yaml"), encoding: .utf8)
        }
        let yaml = (shipped ?? TestServer.shippedConfiguration).replacingOccurrences(
            of: "  tokens: []",
            with: "  tokens: [{id: \(tokenID), sha256: \"\(hex)\", scopes: [\(scopes)]}]\n  # tokens: []"
        )
        .replacingOccurrences(
            of: "token: {requests_per_minute: 6000, burst: 600}",
            with: "token: {requests_per_minute: 10000000, burst: 1000000}")
        try configure(yaml).write(toFile: config, atomically: true, encoding: .utf8)
        let binary =
            (release.map { [$0.appendingPathComponent(".build/release/cloak")] }
            ?? [".build/debug/cloak", ".build/release/cloak"].map {
                TestServer.repositoryRoot.appendingPathComponent($0)
            })
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
        guard let binary else { throw CocoaError(.fileNoSuchFile) }
        self.binary = binary
        configPath = config
        // A listener that speaks TLS or PROXY protocol says so with `ready` (it cannot answer a
        // plain request).
        let isReady = ready ?? { RawHTTPClient.waitUntil(port: $0, path: "/readyz", answers: 200, attempts: 1) }
        // Another test's server may take the port between `freePort()` and this node's bind (and
        // answer its readiness): the node is ready only once its own process holds the port,
        // and one that could not bind it starts again on another.
        var attempt = 0
        while true {
            attempt += 1
            let port = try Self.freePort()
            let output = "\(directory)/node-\(port).log"
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let process = Process()
            let variables = ProcessInfo.processInfo.environment.merging(
                [
                    "CLOAK_SERVER_LISTEN": "127.0.0.1:\(port)", "CLOAK_SERVER_THREADS": "2",
                    "CLOAK_VAULT_STORE": store, "CLOAK_VAULT_KEYS": "env:CLOAK_MASTER_KEY",
                    "CLOAK_MASTER_KEY": Self.masterKey,
                ].merging(environment) { _, new in new }
            ) { _, new in new }
            process.executableURL = binary
            process.arguments = ["serve", "--config", config]
            process.environment = variables
            guard let log = FileHandle(forWritingAtPath: output) else { throw CocoaError(.fileNoSuchFile) }
            process.standardOutput = log
            process.standardError = log
            try process.run()
            // Ready when /readyz answers 200 from this process; a process that exits (a refused
            // configuration or key ring) fails at once.
            let deadline = Date().addingTimeInterval(30)
            var started = false
            while process.isRunning, Date() < deadline {
                if isReady(port) && Self.holds(pid: process.processIdentifier, port: port) {
                    started = true
                    break
                }
            }
            if started {
                (self.port, self.output, self.process, self.variables, self.logHandle) = (
                    port, output, process, variables, log
                )
                return
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
            }
            process.waitUntilExit()
            try? log.close()
            let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            guard attempt < 3, said.contains("already served by another process") else {
                throw CocoaError(.executableLoad)
            }
        }
    }

    /// Whether process `pid` holds a listening TCP socket on `port` (`/proc/net/tcp`, and the
    /// process's descriptors); true where there is no `/proc` to ask.
    static func holds(pid: Int32, port: Int) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return true }
        let suffix = ":" + String(format: "%04X", port)
        var inodes = Set<String>()
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // local_address, …, st (0A: LISTEN), …, inode
            guard fields.count > 9, fields[1].hasSuffix(suffix), fields[3] == "0A" else { continue }
            inodes.insert(String(fields[9]))
        }
        guard !inodes.isEmpty else { return false }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.contains { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                target.hasPrefix("socket:[")
            else { return false }
            return inodes.contains(String(target.dropFirst(8).dropLast()))
        }
    }

    /// Runs `cloak <arguments> --config <this node's>` as an operator would beside it, with the
    /// node's variables (and `environment`): its exit status and everything it printed.
    package func command(_ arguments: [String], environment: [String: String] = [:]) throws -> (
        status: Int32, output: String
    ) {
        let run = Process()
        run.executableURL = binary
        run.arguments = arguments + ["--config", configPath]
        run.environment = variables.merging(environment) { _, new in new }
        let pipe = Pipe()
        run.standardOutput = pipe
        run.standardError = pipe
        try run.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        return (run.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    package func client() throws -> RawHTTPClient { try RawHTTPClient(port: port, timeout: 20) }

    /// A client whose reads wait up to `timeout` seconds: for an answer the node works long
    /// for (a debug build decrypting and reading megabytes beside a loaded machine's tests).
    package func client(timeout: TimeInterval) throws -> RawHTTPClient {
        try RawHTTPClient(port: port, timeout: timeout)
    }

    /// The process id (to read `/proc/PID/…`).
    package var pid: Int32 { process.processIdentifier }

    /// The process's resident memory in bytes (`VmRSS`), or nil once it is gone.
    package var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kb = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kb * 1024
    }

    /// SIGKILL: no drain, no flush.
    package func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    package func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    package var log: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    package static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.featureUnsupported) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
