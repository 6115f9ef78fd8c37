import CloakTesting
import Foundation
import Synchronization
import Testing

/// A store that cannot write (here: the process may not grow its files, as on a full disk)
/// answers 503 with 1500, stays up, and loses nothing it acknowledged.
@Suite struct StoreFailureTests {
    @Test func aFullDiskAnswers1500AndKeepsEveryAcknowledgedAlias() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try TestServer.configurationWithTokens.write(
            toFile: "\(directory.path)/cloak.yaml", atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        let binary = try ProcessTests.binary.path
        let environment = ProcessInfo.processInfo.environment.merging([
            "CLOAK_SERVER_LISTEN": "127.0.0.1:\(port)", "CLOAK_SERVER_THREADS": "1",
            "CLOAK_VAULT_STORE": "sqlite:\(directory.path)/data/cloak.db",
            "CLOAK_VAULT_KEYS": "file:\(directory.path)/data/keys.json",
        ]) { _, new in new }

        // Files may not grow past 1000 KiB; SIGXFSZ is ignored so writes fail with EFBIG instead.
        let limited = Process()
        limited.executableURL = URL(fileURLWithPath: "/bin/bash")
        limited.arguments = [
            "-c", "trap '' XFSZ; ulimit -f 1000; exec \"$0\" serve --config \"$1\"", binary,
            "\(directory.path)/cloak.yaml",
        ]
        limited.environment = environment
        limited.standardOutput = FileHandle.nullDevice
        limited.standardError = FileHandle.nullDevice
        try limited.run()
        defer { if limited.isRunning { kill(limited.processIdentifier, SIGKILL) } }
        var healthy = RawHTTPClient.waitUntil(port: port, path: "/healthz")
        try #require(healthy)

        let client = try RawHTTPClient(port: port)
        var acknowledged: [(alias: String, value: String)] = []
        var failure: RawHTTPClient.Response?
        let padding = String(repeating: "x", count: 2000)
        for n in 0..<2000 where failure == nil {
            let value = "full-disk-\(n)-\(padding)"
            let r = try client.request(
                "POST", "/aliases", json: #"{"data":[{"value":"\#(value)"}]}"#,
                headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
            if r.status == 201, let alias = VaultAPITests.aliases(r).first?["alias"] as? String {
                acknowledged.append((alias, value))
            } else {
                failure = r
            }
        }
        let refused = try #require(failure, "the store never filled up")
        #expect(refused.status == 503)
        #expect(refused.errorCode == 1500)
        #expect(!refused.text.contains("full-disk-"))
        #expect(try RawHTTPClient(port: port).request("GET", "/healthz").status == 200)
        kill(limited.processIdentifier, SIGTERM)
        limited.waitUntilExit()

        // Without the limit, every acknowledged alias is there.
        let again = Process()
        again.executableURL = try ProcessTests.binary
        again.arguments = ["serve", "--config", "\(directory.path)/cloak.yaml"]
        again.environment = environment
        again.standardOutput = FileHandle.nullDevice
        try again.run()
        defer { kill(again.processIdentifier, SIGTERM); again.waitUntilExit() }
        healthy = RawHTTPClient.waitUntil(port: port, path: "/healthz")
        try #require(healthy)
        let reader = try RawHTTPClient(port: port)
        var lost = 0
        for (alias, value) in acknowledged {
            let r = try reader.request(
                "GET", "/aliases/\(alias)", headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
            if ((r.json?["data"] as? [[String: Any]])?.first?["value"] as? String) != value { lost += 1 }
        }
        #expect(acknowledged.count > 10, "refused after \(acknowledged.count): \(refused.status) \(refused.text)")
        #expect(lost == 0, "\(lost) of \(acknowledged.count) acknowledged aliases were lost")
    }
}
