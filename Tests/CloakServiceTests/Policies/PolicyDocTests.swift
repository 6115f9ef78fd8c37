import CloakTesting
import Foundation
import Testing

/// `docs/policies.md`'s worked example as written: its configuration served by a real node, its
/// curl commands run by bash (the port the node was given in place of 8080), and the answers it
/// quotes.
@Suite(.tags(.sockets, .processes)) struct PolicyDocTests {
    @Test func theSupportToolExampleRunsAsWritten() throws {
        let doc = try String(
            contentsOf: TestServer.repositoryRoot.appendingPathComponent("docs/policies.md"), encoding: .utf8)
        let yaml = try #require(ImportJobTests.fenced(doc, language: "yaml").first { $0.contains("policies:") })
        let commands = ImportJobTests.fenced(doc, language: "sh")
        let miss = try #require(ImportJobTests.fenced(doc, language: "json").first)
        #expect(commands.count == 2)
        let server = try TestServer(yaml: yaml)
        defer { server.stop() }
        func run(_ command: String, _ environment: [String: String] = [:]) throws -> [String: Any] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [
                "-c", command.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(server.port)"),
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(command)")
        }
        let stored = try run(commands[0])
        let aliases = ((stored["data"] as? [[String: Any]]) ?? []).compactMap {
            (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        }
        try #require(aliases.count == 2, "\(stored)")
        var shown: [String] = []
        for alias in aliases {
            let answer = try run(commands[1], ["CARD_ALIAS": alias])
            shown += ((answer["data"] as? [[String: Any]]) ?? []).compactMap { $0["value"] as? String }
        }
        #expect(shown == ["411111******1111", "***-**-6789"])
        for value in shown { #expect(doc.contains(#""value": "\#(value)""#)) }
        // Any other classifier: a miss's answer, as quoted.
        let other = try run(
            commands[0].replacingOccurrences(
                of: #""4111111111111111","classifiers":["card"]"#, with: #""5555555555554444","classifiers":["note"]"#))
        let otherAlias = try #require(
            ((other["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        let denied = try run(commands[1], ["CARD_ALIAS": otherAlias])
        let quoted = try JSONSerialization.jsonObject(with: Data(miss.utf8)) as? NSDictionary
        #expect(denied as NSDictionary == quoted, "\(denied)")
    }
}
