import CloakCore
import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakService

/// Live reload of a running `cloak serve`: SIGHUP (and `cloak reload`) under load adds a form and
/// revokes a YAML token for requests that start after it, fails no other request, refuses a
/// broken file whole, and keeps settings that need a restart.
@Suite(.serialized, .tags(.processes, .sockets)) struct ReloadTests {
    static let extraForm = """
        forms:
          extra:
            mapping_policy: nestedJSON
            fields:
              - {name: name, type: cardHolderName, required: true}

        """

    static func reloads(_ node: CloakNode, _ result: String) -> Int {
        guard let text = try? node.client().request("GET", "/metrics", headers: auth).text else { return -1 }
        let prefix = "cloak_config_reloads_total{result=\"\(result)\"} "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
            ?? 0
    }

    /// Every request of the test carries the node's token: its rate is unlimited there (the
    /// anonymous one is not, and the load would spend it).
    static let auth = [("Authorization", "Bearer \(CloakNode.token)")]

    static func validateExtra(_ node: CloakNode) -> Int {
        (try? node.client().request(
            "POST", "/forms/extra/validate", json: #"{"fields":{"name":"Ada"}}"#, headers: auth
        ).status) ?? 0
    }

    static func createStatus(_ node: CloakNode, bearer: String) -> Int {
        (try? node.client().request(
            "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111","format":"UUID"}]}"#,
            headers: [("Authorization", "Bearer \(bearer)")]
        ).status) ?? 0
    }

    @Test func sighupAddsAFormAndRevokesATokenUnderLoadAndABrokenFileChangesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let pidFile = "\(directory.path)/cloak.pid"
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            environment: ["CLOAK_SERVER_PID_FILE": pidFile])
        defer { node.stop() }
        let original = try String(contentsOfFile: node.configPath, encoding: .utf8)
        // A second YAML token, revoked by the reload.
        let leaving = "leaving-token-secret"
        let leavingHex = Digest.sha256(Array(leaving.utf8)).map { String(format: "%02x", $0) }.joined()
        let withLeaving = original.replacingOccurrences(
            of: "scopes: [aliases:create, aliases:reveal, aliases:lookup, aliases:update, aliases:delete]}]",
            with:
                "scopes: [aliases:create, aliases:reveal, aliases:lookup, aliases:update, aliases:delete]}, {id: leaving, sha256: \"\(leavingHex)\", scopes: [aliases:create]}]"
        )
        #expect(withLeaving != original)
        try withLeaving.write(toFile: node.configPath, atomically: true, encoding: .utf8)
        // cloak reload finds the process by server.pid_file and signals it.
        #expect(Poll.until { FileManager.default.fileExists(atPath: pidFile) })
        let sent = try node.command(["reload"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(Poll.until { Self.createStatus(node, bearer: leaving) == 201 })
        #expect(Self.reloads(node, "applied") == 1)
        #expect(Self.validateExtra(node) == 404)

        // Load on the endpoints the reload does not touch: none of it may fail.
        let failures = Mutex<[Int]>([])
        let requests = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let load = Thread {
            DispatchQueue.concurrentPerform(iterations: 3) { worker in
                while !stop.load(ordering: .relaxed) {
                    let status =
                        worker == 0
                        ? Self.createStatus(node, bearer: CloakNode.token)
                        : ((try? node.client().request(
                            "POST", "/forms/checkout/validate", json: #"{"fields":{"card_data.card_number":"4111"}}"#,
                            headers: Self.auth
                        ).status)
                            ?? 0)
                    if status != 201 && status != 200 && status != 422 { failures.withLock { $0.append(status) } }
                    requests.add(1, ordering: .relaxed)
                }
            }
        }
        load.start()
        while requests.load(ordering: .relaxed) < 30 { usleep(5_000) }

        // The form added, the token removed: both take effect together, for later requests.
        let next = original.replacingOccurrences(of: "\nforms:\n", with: "\n" + Self.extraForm)
        #expect(next.contains("  extra:"))
        let merged = next.replacingOccurrences(of: "forms:\n  # A card checkout", with: "  # A card checkout")
        try merged.write(toFile: node.configPath, atomically: true, encoding: .utf8)
        kill(node.pid, SIGHUP)
        #expect(Poll.until { Self.validateExtra(node) == 200 })
        #expect(Self.createStatus(node, bearer: leaving) == 401)
        #expect(Self.reloads(node, "applied") == 2)
        let before = requests.load(ordering: .relaxed)
        while requests.load(ordering: .relaxed) < before + 30 { usleep(5_000) }

        // A broken file is refused whole: the form and the tokens stay as they were.
        try "forms: [this is not: a configuration\n".write(toFile: node.configPath, atomically: true, encoding: .utf8)
        kill(node.pid, SIGHUP)
        #expect(Poll.until { Self.reloads(node, "refused") == 1 })
        #expect(Self.validateExtra(node) == 200)
        #expect(Self.createStatus(node, bearer: CloakNode.token) == 201)
        #expect(Self.createStatus(node, bearer: leaving) == 401)

        // A setting that needs a restart is logged and kept: the node still listens where it did.
        try merged.replacingOccurrences(of: "max_body_bytes: 1048576", with: "max_body_bytes: 2097152")
            .write(toFile: node.configPath, atomically: true, encoding: .utf8)
        kill(node.pid, SIGHUP)
        #expect(Poll.until { Self.reloads(node, "applied") == 3 })
        #expect(Self.validateExtra(node) == 200)

        stop.store(true, ordering: .relaxed)
        while load.isExecuting { usleep(10_000) }
        let failed = failures.withLock { $0 }
        #expect(
            failed.isEmpty,
            "\(failed.count) of \(requests.load(ordering: .relaxed)) failed, e.g. \(Array(failed.prefix(5)))")
        node.stop()
        #expect(node.log.contains("configuration reload refused"))
        #expect(node.log.contains(#""setting":"server""#))
        #expect(!FileManager.default.fileExists(atPath: pidFile), "the pid file goes with the process")
    }

    /// A pid file that names another process (a crash left it, and the id was reused): the
    /// reload refuses and signals nothing, and the process lives on.
    @Test func aStalePIDFileNamingAnotherProcessIsNotSignalled() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let pidFile = "\(directory.path)/cloak.pid"
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            environment: ["CLOAK_SERVER_PID_FILE": pidFile])
        defer { node.stop() }
        #expect(Poll.until { FileManager.default.fileExists(atPath: pidFile) })
        // A process that SIGHUP would end: `sleep`.
        let bystander = Process()
        bystander.executableURL = URL(fileURLWithPath: "/bin/sleep")
        bystander.arguments = ["300"]
        try bystander.run()
        defer {
            kill(bystander.processIdentifier, SIGKILL)
            bystander.waitUntilExit()
        }
        try "\(bystander.processIdentifier)\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        let refused = try node.command(["reload"])
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.output.contains("is not cloak serve"), "\(refused.output)")
        #expect(bystander.isRunning)
        // The node's own pid, written back, is signalled.
        try "\(node.pid)\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        let sent = try node.command(["reload"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(Poll.until { Self.reloads(node, "applied") == 1 })
    }

    /// Review V, item 10: the shipped configuration sets no `server.pid_file`; reload then
    /// finds the one `cloak serve` of the same file on this machine, and says how to signal it
    /// when there is none.
    @Test func reloadWithoutAPIDFileFindsTheNodeOfItsConfiguration() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(store: "sqlite:\(directory.path)/cloak.db", directory: directory.path)
        let sent = try node.command(["reload"])
        #expect(sent.status == 0 && sent.output.contains("pid \(node.pid)"), "\(sent.output)")
        #expect(Poll.until { Self.reloads(node, "applied") == 1 })
        node.stop()
        let answer = try ProcessTests.run(["reload", "--config", node.configPath])
        #expect(answer.status == 2, "\(answer.output)")
        #expect(answer.output.contains("no cloak serve of") && answer.output.contains("kill -HUP"), "\(answer.output)")
    }

    @Test func whatNeedsARestartIsNamed() throws {
        let running = try ServiceConfiguration.parse(yaml: TestServer.shippedConfiguration, environment: [:])
        var next = running
        #expect(ServiceHost.needsRestart(running, next).isEmpty)
        next.forms = [:]
        next.limits.anonymous.requestsPerMinute = 1
        next.corsAllowedOrigins = ["https://example.com"]
        #expect(ServiceHost.needsRestart(running, next).isEmpty)
        next.server.port = 1
        next.vault.store = "sqlite:/elsewhere.db"
        next.authRefreshSeconds = 60
        #expect(ServiceHost.needsRestart(running, next) == ["server", "vault", "auth.refresh_s"])
    }
}
