import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// Review defect 1: hostile traffic on the forward-proxy door (large tunnelled answers never read
/// and reset with SO_LINGER 0, answers abandoned half read, absolute-form closes, idle timeouts,
/// cut handshakes) once freed a filter bufferevent that libevent's timer heap still held: the
/// process died with SIGSEGV or its egress loops spun at 100 % CPU. The storm is
/// `scripts/tunnel-storm`, run against the `cloak` executable (`CLOAK_TEST_BINARY` names another,
/// such as the AddressSanitizer build of README "Tests").
@Suite(.serialized, .tags(.racy, .sockets, .processes)) struct TunnelStormTests {
    static let token = "storm-egress-token"

    @Test func hostileTunnelTrafficNeitherCrashesNorSpinsTheEgressLoops() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try TLSUpstream(certificates: certificates, recordBodies: false)
        defer { upstream.stop() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }

        let hex = Digest.sha256(Array(Self.token.utf8)).map { String(format: "%02x", $0) }.joined()
        let yaml =
            TestServer.shippedConfiguration.replacingOccurrences(
                of: "  tokens: []", with: "  tokens: [{id: egress, sha256: \"\(hex)\", scopes: [\"egress:psp\"]}]")
                + """

                egress:
                  listen: "127.0.0.1:0"
                  ca: {cert: "\(directory.path)/egress-ca.pem", key: "\(directory.path)/egress-ca-key.pem"}
                  routes:
                    - id: psp
                      upstream: "https://127.0.0.1:\(upstream.port)"
                      paths: ["/v1/*"]
                      methods: [POST]
                      request:
                        - {reveal: {form: ["card[number]"]}}
                      ca_file: "\(certificates.caFile)"
                      allow_private: true

                """
        let config = "\(directory.path)/cloak.yaml"
        try yaml.write(toFile: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = try ProcessTests.binary
        process.arguments = ["serve", "--config", config]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "CLOAK_SERVER_LISTEN": "127.0.0.1:0", "CLOAK_SERVER_THREADS": "2", "CLOAK_SERVER_IDLE_TIMEOUT_S": "2",
            "CLOAK_VAULT_STORE": "sqlite:\(directory.path)/cloak.db",
            "CLOAK_VAULT_KEYS": "file:\(directory.path)/keys.json",
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
        ]) { _, new in new }
        let errors = "\(directory.path)/stderr.txt"
        #expect(FileManager.default.createFile(atPath: errors, contents: nil))
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Both listeners on ports the kernel picked (a port chosen ahead could be taken meanwhile),
        // read from the start-up log lines.
        var port = 0, egressPort = 0
        while port == 0 || egressPort == 0 {
            let line = output.fileHandleForReading.readLine()
            guard !line.isEmpty || process.isRunning else { break }
            let found =
                line.range(of: #""address":"127.0.0.1:"#).flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
                ?? 0
            if line.contains(#""msg":"listening""#) { port = found }
            if line.contains(#""msg":"egress proxy listening""#) { egressPort = found }
        }
        let drain = output.fileHandleForReading
        Thread { _ = drain.readDataToEndOfFile() }.start()  // the access log must not fill the pipe
        #expect(port > 0 && egressPort > 0, "\(Self.text(errors))")
        #expect(RawHTTPClient.waitUntil(port: port, path: "/readyz"))

        let credentials = "Basic " + Data("egress:\(Self.token)".utf8).base64EncodedString()
        let storm = try EgressFixture.run(
            "python3",
            [
                TestServer.repositoryRoot.appendingPathComponent("scripts/tunnel-storm").path, String(egressPort),
                "127.0.0.1:\(upstream.port)", credentials, "\(directory.path)/egress-ca.pem",
                "--actions", "240", "--workers", "12", "--seconds", "40",
            ])
        #expect(storm.status == 0, "\(storm.err)")
        #expect(storm.out.contains(#""actions": 240"#), "\(storm.out)")
        #expect(process.isRunning, "the process died: \(Self.text(errors))")

        // The egress loops fall back to idle: at most 5 ticks of CPU (50 ms) over a one-second
        // window, polled for up to 30 s (the storm's idle tunnels time out after 2 s).
        let pid = process.processIdentifier
        var idle = false
        let deadline = Date().addingTimeInterval(30)
        while !idle && Date() < deadline && process.isRunning {
            let before = Self.egressLoopTicks(pid)
            Thread.sleep(forTimeInterval: 1)
            let after = Self.egressLoopTicks(pid)
            #expect(before.threads == 2)
            idle = after.ticks - before.ticks <= 5
        }
        #expect(idle, "the egress loops stayed busy after the storm")

        // A new tunnel is still answered, end to end.
        let curl = try EgressFixture.run(
            "curl",
            [
                "-sS", "--max-time", "10", "--proxy", "http://127.0.0.1:\(egressPort)", "--proxy-user",
                "egress:\(Self.token)",
                "--cacert", "\(directory.path)/egress-ca.pem", "https://127.0.0.1:\(upstream.port)/v1/charges",
                "-d", "amount=1000",
            ])
        #expect(curl.status == 0 && curl.out == "amount=1000", "\(curl.out) \(curl.err)")
        #expect(RawHTTPClient.waitUntil(port: port, path: "/readyz", attempts: 1))

        kill(pid, SIGTERM)
        process.waitUntilExit()
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 0,
            "\(process.terminationReason) \(process.terminationStatus)")
        #expect(!Self.text(errors).contains("AddressSanitizer"), "\(Self.text(errors))")
    }

    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// User and system ticks of the threads named `cloak-egress-*`.
    static func egressLoopTicks(_ pid: Int32) -> (threads: Int, ticks: Int) {
        let tasks = "/proc/\(pid)/task"
        var threads = 0, ticks = 0
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard text("\(tasks)/\(tid)/comm").hasPrefix("cloak-egress") else { continue }
            let stat = text("\(tasks)/\(tid)/stat")
            // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
            threads += 1
            ticks += user + system
        }
        return (threads, ticks)
    }
}

/// `/readyz` takes the node out of rotation when any loop has stopped turning.
@Suite(.tags(.sockets)) struct ReadinessWatchdogTests {
    @Test func readyzIs503WhileALoopIsStalledAndNamesIt() throws {
        try withTestServer(TestService(yaml: TestServer.configurationWithTokens + "\n", environment: [:])) {
            server throws in
            #expect(try server.client().request("GET", "/readyz").status == 200)
            // A loop that registered and never turned (as a loop spinning inside libevent would not).
            let stuck = server.service.watchdog.register(name: "egress-7", now: 1)
            let r = try server.client().request("GET", "/readyz")
            #expect(r.status == 503)
            #expect(r.text == #"{"status":"event loop stalled","loops":["egress-7"]}"#, "\(r.text)")
            #expect(try server.client().request("GET", "/healthz").status == 200)
            server.service.watchdog.unregister([stuck])
            #expect(try server.client().request("GET", "/readyz").status == 200)
        }
    }

    @Test func loopStallIsConfigurable() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  loop_stall_s: 5 ", with: "  loop_stall_s: 2.5 ")
        let c = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
        #expect(c.loopStallSeconds == 2.5)
        let bad = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  loop_stall_s: 5 ", with: "  loop_stall_s: 0 ")
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: bad, environment: [:]) }
    }
}
