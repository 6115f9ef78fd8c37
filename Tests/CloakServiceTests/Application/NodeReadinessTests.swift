import CloakTesting
import Foundation
import Testing

/// Review defects IV (issue 55), item 9: a node is ready only on a store that takes writes, and
/// a second `cloak serve` never shares a served address.
@Suite(.tags(.racy, .processes, .sockets)) struct NodeReadinessTests {
    /// A second `cloak serve` on the same address bound with SO_REUSEPORT beside the first and
    /// silently took half its connections. It refuses to start, and the first serves on.
    @Test func aSecondServeOnAServedAddressRefusesToStart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(store: "sqlite:\(directory.path)/first.db", directory: directory.path)
        defer { node.stop() }
        let second = Process()
        second.executableURL = try ProcessTests.binary
        second.arguments = ["serve", "--config", node.configPath]
        var variables = node.variables
        variables["CLOAK_VAULT_STORE"] = "sqlite:\(directory.path)/second.db"
        second.environment = variables
        let output = Pipe()
        second.standardOutput = output
        second.standardError = output
        try second.run()
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        #expect(Poll.until(seconds: 30) { !second.isRunning }, "the second process is serving")
        if second.isRunning { kill(second.processIdentifier, SIGKILL) }
        second.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(second.terminationStatus != 0)
        #expect(text.contains("already served by another process"), "\(text)")
        #expect(RawHTTPClient.waitUntil(port: node.port, path: "/readyz", answers: 200, attempts: 20))
    }

    /// `/readyz` answered ready on a store that no longer takes writes, so a balancer kept
    /// sending creates that all failed. A database an operator made read-only (here for new
    /// sessions, and the node's sessions ended so it reconnects) takes the node out of rotation.
    @Test(
        .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
        .tags(.postgres))
    func aReadOnlyPostgreSQLDatabaseIsNotReady() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let database = String(url[url.index(after: url.lastIndex(of: "/")!)...])
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(store: url, directory: directory.path)
        defer { node.stop() }
        #expect(RawHTTPClient.waitUntil(port: node.port, path: "/readyz", answers: 200, attempts: 20))
        try PostgresTestCluster.psql(url, "ALTER DATABASE \(database) SET default_transaction_read_only = on")
        let admin = String(url[..<url.lastIndex(of: "/")!]) + "/postgres"
        try PostgresTestCluster.psql(
            admin,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()"
        )
        #expect(
            Poll.until(seconds: 30) {
                (try? node.client().request("GET", "/readyz"))?.status == 503
            }, "a read-only database still answered ready")
        let answer = try node.client().request("GET", "/readyz")
        #expect(answer.header("Retry-After") != nil)
        // Writable again: ready again (the node's next sessions take writes).
        try PostgresTestCluster.psql(admin, "ALTER DATABASE \(database) SET default_transaction_read_only = off")
        try PostgresTestCluster.psql(
            admin,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()"
        )
        #expect(Poll.until(seconds: 30) { (try? node.client().request("GET", "/readyz"))?.status == 200 })
    }
}
