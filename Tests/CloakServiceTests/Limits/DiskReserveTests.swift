import CloakService
import CloakTesting
import Foundation
import Testing

/// Review V, item 4: reveals write their audit event in the store, so a full disk stopped every
/// audited read (SQLite failed 3,940 of 3,963 reveals). `limits.disk_reserve_mib` keeps room:
/// below it what grows the store gets 507 with `Retry-After`, while reveals, deletes and their
/// audit go on. A real small file system: `cloak serve` in a mount namespace of its own with a
/// 48 MiB tmpfs for its store, filled from outside through `/proc/PID/root`.
@Suite(.serialized, .tags(.racy, .sockets))
struct DiskReserveTests {
    static var canMount: Bool {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = ["-m", "/bin/sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }

    static func bearer() -> [(String, String)] { [("Authorization", "Bearer \(TestServer.fullToken)")] }

    @Test(.enabled(if: canMount, "needs a mount namespace (unshare -m, as root)"))
    func belowTheReserveRevealsAndDeletesGoOnAndNewValuesWait() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = "\(directory.path)/store"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try TestServer.configurationWithTokens
            .replacingOccurrences(of: "  disk_reserve_mib: 256 ", with: "  disk_reserve_mib: 16 ")
            .write(toFile: "\(directory.path)/cloak.yaml", atomically: true, encoding: .utf8)
        let port = freeLoopbackPort()
        let node = Process()
        node.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        node.arguments = [
            "-m", "--propagation", "private", "/bin/bash", "-c",
            "mount -t tmpfs -o size=48m tmpfs \"$1\" && exec \"$0\" serve --config \"$2\"",
            try ProcessTests.binary.path,
            store, "\(directory.path)/cloak.yaml",
        ]
        node.environment = ProcessInfo.processInfo.environment.merging([
            "CLOAK_SERVER_LISTEN": "127.0.0.1:\(port)", "CLOAK_SERVER_THREADS": "1",
            "CLOAK_VAULT_STORE": "sqlite:\(store)/cloak.db", "CLOAK_VAULT_KEYS": "file:\(store)/keys.json",
        ]) { _, new in new }
        node.standardOutput = FileHandle.nullDevice
        node.standardError = FileHandle.nullDevice
        try node.run()
        defer {
            if node.isRunning { kill(node.processIdentifier, SIGTERM) }
            node.waitUntilExit()
        }
        try #require(RawHTTPClient.waitUntil(port: port, path: "/readyz"))
        let client = try RawHTTPClient(port: port)
        func create(_ value: String) throws -> RawHTTPClient.Response {
            try client.request(
                "POST", "/aliases", json: #"{"data":[{"value":"\#(value)","format":"UUID"}]}"#, headers: Self.bearer())
        }
        let kept = try create("4111111111111111")
        #expect(kept.status == 201, "\(kept.text)")
        let alias = try #require(VaultAPITests.aliases(kept).first?["alias"] as? String)
        #expect(try client.request("GET", "/readyz").text == #"{"status":"ready"}"#)

        // The node's own tmpfs, seen from outside its namespace: filled to 8 MiB free.
        let inside = "/proc/\(node.processIdentifier)/root\(store)"
        var info = statvfs()
        try #require(statvfs(inside, &info) == 0)
        let free = Int64(info.f_bavail) * Int64(info.f_frsize)
        let filler = "\(inside)/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: Data(count: Int(free - (8 << 20))))
        #expect(Poll.until { (try? client.request("GET", "/readyz").text.contains("below_reserve")) == true })

        // What grows the store waits: 507, Retry-After, the reserve named; nothing stored.
        let refused = try create("5555555555554444")
        #expect(refused.status == 507 && refused.errorCode == 1507, "\(refused.status) \(refused.text)")
        #expect(refused.header("Retry-After") == "30")
        #expect(refused.text.contains("limits.disk_reserve_mib") && !refused.text.contains("5555555555554444"))
        // Reveals (each audited in the store) and a delete go on.
        for _ in 0..<50 {
            let revealed = try client.request("GET", "/aliases/\(alias)", headers: Self.bearer())
            #expect(revealed.status == 200 && revealed.text.contains("4111111111111111"), "\(revealed.text)")
        }
        let metrics = try client.request("GET", "/metrics").text
        #expect(metrics.contains("cloak_disk_below_reserve 1"), "\(metrics.prefix(200))")
        #expect([200, 204].contains(try client.request("DELETE", "/aliases/\(alias)", headers: Self.bearer()).status))

        // Room again: new values are taken.
        try FileManager.default.removeItem(atPath: filler)
        #expect(Poll.until { (try? client.request("GET", "/readyz").text) == #"{"status":"ready"}"# })
        #expect(try create("5555555555554444").status == 201)
    }

    @Test func checkConfigBoundsTheReserve() throws {
        for (value, ok) in [("0", true), ("256", true), ("-1", false), ("2000000", false)] {
            let yaml = TestServer.shippedConfiguration.replacingOccurrences(
                of: "  disk_reserve_mib: 256 ", with: "  disk_reserve_mib: \(value) ")
            #expect(yaml.contains("disk_reserve_mib: \(value) "))
            do {
                let parsed = try ServiceConfiguration.parse(yaml: yaml)
                #expect(ok && parsed.limits.diskReserveMiB == Int(value), "\(value)")
            } catch {
                #expect(!ok && "\(error)".contains("limits.disk_reserve_mib"), "\(value): \(error)")
            }
        }
    }
}
