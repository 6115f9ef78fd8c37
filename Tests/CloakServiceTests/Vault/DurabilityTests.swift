import CloakTesting
import Foundation
import Synchronization
import Testing

/// A 2xx answer means committed: every alias answered before a `kill -9` reveals after restart.
@Suite(.tags(.sockets)) struct DurabilityTests {
    final class Process_ {
        let process = Process()
        let port: Int

        init(directory: String, port: Int) throws {
            self.port = port
            process.executableURL = try ProcessTests.binary
            process.arguments = ["serve", "--config", "\(directory)/cloak.yaml"]
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.environment = ProcessInfo.processInfo.environment.merging([
                "CLOAK_SERVER_LISTEN": "127.0.0.1:\(port)", "CLOAK_SERVER_THREADS": "2",
                "CLOAK_VAULT_STORE": "sqlite:\(directory)/data/cloak.db",
                "CLOAK_VAULT_KEYS": "file:\(directory)/data/keys.json",
            ]) { _, new in new }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        func waitUntilHealthy() -> Bool {
            for _ in 0..<200 {
                if (try? RawHTTPClient(port: port, timeout: 1).request("GET", "/healthz").status) == 200 { return true }
                usleep(25_000)
            }
            return false
        }
    }

    @Test func everyAliasAnsweredBeforeKill9RevealsAfterRestart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try TestServer.configurationWithTokens.write(
            toFile: "\(directory.path)/cloak.yaml", atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        let first = try Process_(directory: directory.path, port: port)
        #expect(first.waitUntilHealthy())

        let answered = Mutex<[(alias: String, value: String)]>([])
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        for worker in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? RawHTTPClient(port: port, timeout: 5) else { return }
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    let value = "durable-\(worker)-\(n)"
                    n += 1
                    guard
                        let r = try? client.request(
                            "POST", "/aliases", json: #"{"data":[{"value":"\#(value)","format":"UUID"}]}"#,
                            headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
                    else { return }  // the server died mid-request: that answer never came
                    if r.status == 201, let alias = VaultAPITests.aliases(r).first?["alias"] as? String {
                        answered.withLock { $0.append((alias, value)) }
                    }
                }
            }.start()
        }
        // Let the load run, then kill the server without warning while requests are in flight.
        usleep(1_200_000)
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        stop.store(true, ordering: .relaxed)
        group.wait()

        let acknowledged = answered.withLock { $0 }
        #expect(acknowledged.count > 50, "the load produced only \(acknowledged.count) answers")

        let second = try Process_(directory: directory.path, port: port)
        defer {
            kill(second.process.processIdentifier, SIGTERM)
            second.process.waitUntilExit()
        }
        #expect(second.waitUntilHealthy())
        let client = try RawHTTPClient(port: port)
        var lost: [String] = []
        for (alias, value) in acknowledged {
            let r = try client.request(
                "GET", "/aliases/\(alias)", headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
            let revealed = (r.json?["data"] as? [[String: Any]])?.first?["value"] as? String
            if r.status != 200 || revealed != value { lost.append(alias) }
        }
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged aliases were lost")
    }
}
