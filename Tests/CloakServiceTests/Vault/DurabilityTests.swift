import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

/// A 2xx answer means committed: every alias answered before a `kill -9` reveals after restart.
@Suite(.tags(.sockets, .processes)) struct DurabilityTests {
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

        /// Sends `signal` (SIGKILL: a crash, nothing flushed or drained; SIGTERM: a stop) and
        /// waits for the process to end.
        func end(_ signal: Int32) {
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
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
        first.end(SIGKILL)
        stop.store(true, ordering: .relaxed)
        group.wait()

        let acknowledged = answered.withLock { $0 }
        #expect(acknowledged.count > 50, "the load produced only \(acknowledged.count) answers")

        let second = try Process_(directory: directory.path, port: port)
        defer { second.end(SIGTERM) }
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

    /// Issue 74: a reveal's event is durable before its answer leaves (on SQLite, flushed in the
    /// reads' segment beside the database). Every reveal answered before a `kill -9` has its
    /// event after the restart, which copies what the segment holds into the store.
    @Test func everyRevealAnsweredBeforeKill9IsAuditedAfterRestart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let auditor = "auditor-token-for-durability"
        let hex = Digest.sha256(Array(auditor.utf8)).map { String(format: "%02x", $0) }.joined()
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [", with: "  tokens: [{id: auditor, sha256: \"\(hex)\", scopes: [audit:read]}, ")
        try yaml.write(toFile: "\(directory.path)/cloak.yaml", atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        let first = try Process_(directory: directory.path, port: port)
        #expect(first.waitUntilHealthy())
        let values = (0..<100).map { #"{"value":"audited-\#($0)","format":"UUID"}"# }.joined(separator: ",")
        let created = try RawHTTPClient(port: port).request(
            "POST", "/aliases", json: #"{"data":[\#(values)]}"#,
            headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
        let aliases = VaultAPITests.aliases(created).compactMap { $0["alias"] as? String }
        #expect(aliases.count == 100)

        let answered = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        for worker in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? RawHTTPClient(port: port, timeout: 5) else { return }
                var n = worker
                while !stop.load(ordering: .relaxed) {
                    let alias = aliases[n % aliases.count]
                    n += 4
                    guard
                        let r = try? client.request(
                            "GET", "/aliases/\(alias)",
                            headers: [("Authorization", "Bearer \(TestServer.revealOnlyToken)")])
                    else { return }  // the server died mid-request: that answer never came
                    if r.status == 200 { answered.add(1, ordering: .relaxed) }
                }
            }.start()
        }
        // Reveals answered, then the server killed without warning while more are in flight.
        for _ in 0..<2_000 where answered.load(ordering: .relaxed) < 200 { usleep(5_000) }
        first.end(SIGKILL)
        stop.store(true, ordering: .relaxed)
        group.wait()
        let acknowledged = answered.load(ordering: .relaxed)
        #expect(acknowledged >= 200, "the load produced only \(acknowledged) reveals")

        let second = try Process_(directory: directory.path, port: port)
        defer { second.end(SIGTERM) }
        #expect(second.waitUntilHealthy())
        // Every reveal event of the revealer's token, page by page (an answer in flight when the
        // process died may have its event too: at least as many, never fewer).
        let client = try RawHTTPClient(port: port)
        var events = 0
        var cursor: String?
        repeat {
            let query = "action=reveal&token=revealer&limit=500" + (cursor.map { "&cursor=\($0)" } ?? "")
            let r = try client.request(
                "GET", "/admin/audit?\(query)", headers: [("Authorization", "Bearer \(auditor)")])
            #expect(r.status == 200)
            events += (r.json?["data"] as? [[String: Any]])?.count ?? 0
            cursor = r.json?["next"] as? String
        } while cursor != nil
        #expect(events >= acknowledged, "\(acknowledged) reveals answered, \(events) events after kill -9")
    }
}
