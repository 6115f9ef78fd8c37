import CloakTesting
import Foundation
import Testing

/// Issue 57 item 9: `scripts/postgres start DIR PORT` serves on the port asked for, and refuses
/// one that is taken or not a port.
@Suite(
    .enabled(if: PostgresTestCluster.isAvailable, "needs PostgreSQL (scripts/test starts a cluster)"), .tags(.postgres))
struct PostgresScriptTests {
    @Test func startTakesAPort() throws {
        let directory = TemporaryDirectory()
        let other = TemporaryDirectory()
        defer {
            _ = try? PostgresTestCluster.script(["stop", directory.path])
            directory.remove()
            other.remove()
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: other.path)
        let port = try CloakNode.freePort()
        let started = try PostgresTestCluster.script(["start", directory.path, String(port)])
        #expect(started.status == 0 && started.output.hasSuffix("@127.0.0.1:\(port)/cloak"), "\(started.output)")
        // Taken now: another cluster is refused that port, before initdb's work is wasted on it.
        #expect(try PostgresTestCluster.script(["start", other.path, String(port)]).status == 1)
        #expect(try PostgresTestCluster.script(["start", other.path, "80x"]).status == 2)
    }
}
