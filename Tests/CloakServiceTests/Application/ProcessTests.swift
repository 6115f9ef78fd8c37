import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

/// The `cloak` executable as operators run it.
@Suite(.tags(.sockets, .processes)) struct ProcessTests {
    /// The executable under test: `CLOAK_TEST_BINARY` when set (an AddressSanitizer build), else
    /// the debug or release build.
    static var binary: URL {
        get throws {
            if let given = ProcessInfo.processInfo.environment["CLOAK_TEST_BINARY"], !given.isEmpty {
                return given.hasPrefix("/")
                    ? URL(fileURLWithPath: given) : TestServer.repositoryRoot.appendingPathComponent(given)
            }
            let candidates = [".build/debug/cloak", ".build/release/cloak"].map {
                TestServer.repositoryRoot.appendingPathComponent($0)
            }
            return try #require(
                candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                "build the cloak executable first (swift build)")
        }
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = try binary
        process.arguments = arguments
        process.currentDirectoryURL = TestServer.repositoryRoot
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func checkConfigAcceptsTheShippedConfiguration() throws {
        let (status, output) = try Self.run(["check-config"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("OK"))
    }

    @Test func checkConfigPrintsEveryProblemWithItsPathAndFails() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cloak-bad-\(UUID().uuidString).yaml")
        try "server: {threads: -1}\nforms: {f: {fields: [{name: a, type: nope}]}}\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, output) = try Self.run(["check-config", "--config", file.path])
        #expect(status == 1)
        #expect(output.contains("server.threads"))
        #expect(output.contains("forms.f.fields[0].type"))
    }

    @Test func serveRefusesAnInvalidConfiguration() throws {
        let (status, output) = try Self.run(["serve", "--config", "/nonexistent/cloak.yaml"])
        #expect(status == 2)
        #expect(output.contains("invalid configuration"))
    }

    @Test func keysInitWritesAPrivateFileOnceAndRotateAddsAKey() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let config = "\(directory.path)/cloak.yaml"
        try """
        vault: {keys: "file:\(directory.path)/data/keys.json", store: "sqlite:\(directory.path)/cloak.db", key_refresh_s: 1}

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let first = try Self.run(["keys", "init", "--config", config])
        #expect(first.status == 0, "\(first.output)")
        let path = "\(directory.path)/data/keys.json"
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let before = try String(contentsOfFile: path, encoding: .utf8)
        let again = try Self.run(["keys", "init", "--config", config])
        #expect(again.status == 2 && again.output.contains("refusing to overwrite"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
        let rotated = try Self.run(["keys", "rotate", "--config", config])
        #expect(rotated.status == 0 && rotated.output.contains("k2"), "\(rotated.output)")
        // The file keeps only the wrapping key; the versions are in the store.
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
        let status = try Self.run(["keys", "status", "--json", "--config", config])
        #expect(status.status == 0)
        #expect(
            status.output.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"{"current":"k2","wrapping":"file","versions":[{"id":"k1","records":0},{"id":"k2","records":0}]}"#)
        let retireCurrent = try Self.run(["keys", "retire", "k2", "--config", config])
        #expect(retireCurrent.status == 1 && retireCurrent.output.contains("current"))
        // Until two key_refresh_s have passed since the rotation, a node may still seal with k1.
        var retired = try Self.run(["keys", "retire", "k1", "--config", config])
        let deadline = Date().addingTimeInterval(20)
        while retired.status == 1 && retired.output.contains("was current until") && Date() < deadline {
            usleep(100_000)
            retired = try Self.run(["keys", "retire", "k1", "--config", config])
        }
        #expect(retired.status == 0 && retired.output.contains(#""action":"keys.retire""#), "\(retired.output)")
        let rewrap = try Self.run(["keys", "rewrap", "--config", config])
        #expect(rewrap.status == 0 && rewrap.output.contains("nothing was under an older version"), "\(rewrap.output)")
    }

    @Test func keysRefPrintsTheAuditReferenceOfAnAliasReadFromStandardInput() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let environment = [
            "CLOAK_VAULT_STORE": "sqlite:\(directory.path)/cloak.db",
            "CLOAK_VAULT_KEYS": "file:\(directory.path)/keys.json",
        ]
        _ = try Self.run(["keys", "init"], environment: environment)
        let process = Process()
        process.executableURL = try Self.binary
        process.arguments = ["keys", "ref"]
        process.currentDirectoryURL = TestServer.repositoryRoot
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data("tok_sandbox_abc\n4111117960771111\n".utf8))
        try input.fileHandleForWriting.close()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
            separator: "\n")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("ar_") && $0.count == 19 } && lines[0] != lines[1])
        // The same key ring, the same reference as the server's audit lines.
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = environment["CLOAK_VAULT_STORE"]!
        settings.keys = environment["CLOAK_VAULT_KEYS"]!
        let vault = try VaultBootstrap.open(settings, environment: [:], logger: nil)
        defer { vault.close() }
        #expect(String(lines.first ?? "") == vault.auditReference("tok_sandbox_abc"))
    }

    @Test func ff1CommandReproducesTheNISTSample() throws {
        let encrypted = try Self.run([
            "ff1", "encrypt", "--key", "2B7E151628AED2A6ABF7158809CF4F3C", "--tweak",
            "3737373770717273373737", "--radix", "36", "0123456789abcdefghi",
        ])
        #expect(encrypted.output.trimmingCharacters(in: .whitespacesAndNewlines) == "a9tv40mll9kdu509eum")
        let bad = try Self.run(["ff1", "encrypt", "--key", "zz", "0123"])
        #expect(bad.status != 0)
    }

    @Test func versionPrints() throws {
        let (status, output) = try Self.run(["version"])
        #expect(status == 0)
        #expect(output.hasPrefix("cloak "))
    }

    @Test func serveAnswersAndExitsZeroOnSIGTERM() throws {
        let port = freeLoopbackPort()
        let process = Process()
        process.executableURL = try Self.binary
        process.arguments = ["serve"]
        process.currentDirectoryURL = TestServer.repositoryRoot
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["CLOAK_SERVER_LISTEN": "127.0.0.1:\(port)", "CLOAK_SERVER_THREADS": "2"]) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let healthy = RawHTTPClient.waitUntil(port: port, path: "/healthz")
        #expect(healthy)
        let keptOpen = try? RawHTTPClient(port: port)
        _ = try? keptOpen?.request("GET", "/healthz")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let log = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains(#""msg":"listening""#))
        #expect(log.contains(#""msg":"stopped""#))
    }
}

/// `cloak healthcheck`: what a container's HEALTHCHECK runs (no shell, no curl in the image).
@Suite struct HealthcheckCommandTests {
    @Test func itExitsZeroWhenReadyAndOneOtherwise() throws {
        let server = try TestServer()
        let ready = try ProcessTests.run(["healthcheck", "--url", "http://127.0.0.1:\(server.port)/readyz"])
        #expect(ready.status == 0, "\(ready.output)")
        // The configured listener, moved by CLOAK_SERVER_LISTEN as the image does.
        let configured = try ProcessTests.run(
            ["healthcheck"], environment: ["CLOAK_SERVER_LISTEN": "0.0.0.0:\(server.port)"])
        #expect(configured.status == 0, "\(configured.output)")
        server.stop()
        let down = try ProcessTests.run(["healthcheck", "--url", "http://127.0.0.1:\(server.port)/readyz"])
        #expect(down.status == 1)
    }
}
