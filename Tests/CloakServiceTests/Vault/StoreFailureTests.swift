import CloakTesting
import CloakVault
import Foundation
import Synchronization
import Testing

/// A store that cannot write (here: the process may not grow its files, as on a full disk)
/// answers 503 with 1500, stays up, and loses nothing it acknowledged.
@Suite(.tags(.sockets)) struct StoreFailureTests {
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
        #expect(refused.header("Retry-After") == "2", "a store failure says when to retry")
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

    /// Issue 44 item 6: every 503 the store causes says when to retry: `Retry-After` (and
    /// `extraInfo.retryAfterSeconds`) of 2 s, the store's reconnect backoff; so does `/readyz`'s.
    /// The store goes away under a running service (its vault closed: every job is refused at
    /// once as `store unavailable`, as while PostgreSQL is unreachable).
    @Test func everyAnswerAStoreFailureCausesCarriesRetryAfter() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let auth = [("Authorization", "Bearer \(TestServer.fullToken)")]
            let stored = try client.request(
                "POST", "/aliases", json: #"{"data":[{"value":"kept-before"}]}"#, headers: auth)
            let alias = try #require(VaultAPITests.aliases(stored).first?["alias"] as? String, "\(stored.text)")
            #expect(try client.request("GET", "/readyz").status == 200)

            server.vault.close()
            let answers = [
                try client.request("POST", "/aliases", json: #"{"data":[{"value":"new-after"}]}"#, headers: auth),
                try client.request("POST", "/tokens", json: #"{"data":[{"value":"anonymous-after"}]}"#),
                try client.request(
                    "POST", "/aliases/lookup", json: #"{"data":[{"value":"new-after"}]}"#, headers: auth),
                try client.request("PUT", "/aliases/\(alias)", json: #"{"data":{"classifiers":["x"]}}"#, headers: auth),
                try client.request("DELETE", "/aliases/\(alias)", headers: auth),
            ]
            for answer in answers {
                #expect(answer.status == 503 && answer.errorCode == 1500, "\(answer.text)")
                #expect(answer.header("Retry-After") == String(StoreError.retryAfterSeconds), "\(answer.text)")
                let extra = (answer.json?["error"] as? [String: Any])?["extraInfo"] as? [String: Any]
                #expect(extra?["retryAfterSeconds"] as? Int == StoreError.retryAfterSeconds, "\(answer.text)")
            }
            let readiness = try client.request("GET", "/readyz")
            #expect(readiness.status == 503 && readiness.text.contains("store unavailable"), "\(readiness.text)")
            #expect(readiness.header("Retry-After") == String(StoreError.retryAfterSeconds))
        }
    }
}
