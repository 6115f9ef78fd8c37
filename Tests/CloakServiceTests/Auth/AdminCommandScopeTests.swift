import CloakTesting
import Foundation
import Testing

/// Issue 57 item 5: `cloak tokens`, `bins` and `keys` read only what they need of the
/// configuration: whoever mints a token needs the vault, not a provider's HMAC secret.
@Suite(.tags(.racy)) struct AdminCommandScopeTests {
    @Test func adminCommandsRunWithoutARouteStepsSecretThatServeNeeds() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let config = "\(directory.path)/cloak.yaml"
        try """
        vault: {keys: "file:\(directory.path)/keys.json", store: "sqlite:\(directory.path)/cloak.db"}
        routes:
          - id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
            path: /pay
            upstream: "https://payments.example"
            request:
              - {hmac_header: {key: "env:CYBERSOURCE_SECRET_FOR_TEST", header: X-Mac}}

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let checked = try ProcessTests.run(["check-config", "--config", config])
        #expect(checked.status == 1 && checked.output.contains("CYBERSOURCE_SECRET_FOR_TEST"), "\(checked.output)")

        let commands = [
            ["keys", "init"], ["keys", "status"], ["tokens", "create", "--id", "ops", "--scopes", "aliases:create"],
            ["tokens", "list"],
        ]
        for command in commands {
            let run = try ProcessTests.run(command + ["--config", config])
            #expect(run.status == 0, "\(command.joined(separator: " ")): \(run.output)")
        }
        let csv = "\(directory.path)/bins.csv"
        try "low,high,issuer\n411111,411111,A Bank\n".write(toFile: csv, atomically: true, encoding: .utf8)
        let imported = try ProcessTests.run(["bins", "import", csv, "--config", config])
        #expect(imported.status == 0, "\(imported.output)")

        // The sections they do not read are still checked by name.
        try "vault: {store: \"sqlite:\(directory.path)/cloak.db\"}\nroutez: []\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let typo = try ProcessTests.run(["tokens", "list", "--config", config])
        #expect(typo.status == 2 && typo.output.contains("routez"), "\(typo.output)")
    }

    /// Review V, item 10: `cloak export`, `cloak jobs approve` and `cloak import` read the
    /// vault, auth, forms, limits and jobs alone: no route's step secret, and an error is the
    /// configuration's own message, never `ExitCode(rawValue: 2)`.
    @Test func jobCommandsRunWithoutARouteStepsSecret() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recipient = try ExportJobTests.keypair(directory, "recipient", email: "recipient@example.com")
        let config = "\(directory.path)/cloak.yaml"
        let alice = ExportJobTests.hex(ExportJobTests.alice)
        try """
        vault: {keys: "file:\(directory.path)/keys.json", store: "sqlite:\(directory.path)/cloak.db"}
        auth:
          tokens:
            - {id: alice, sha256: "\(alice)", scopes: [aliases:reveal, jobs:export], person: alice}
            - {id: importer, sha256: "\(alice.reversed().map(String.init).joined())", scopes: [jobs:import, aliases:create]}
        forms:
          cards:
            fields:
              - {name: card_number, type: cardNumber, tokenization: {format: UUID}}
        routes:
          - id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
            path: /pay
            upstream: "https://payments.example"
            request:
              - {hmac_header: {key: "env:CYBERSOURCE_SECRET_FOR_TEST", header: X-Mac}}

        """.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try ProcessTests.run(["keys", "init", "--config", config]).status == 0)
        let asked = try ProcessTests.run(
            ["export", "--everything", "--recipient", recipient.publicKey, "--detach", "--config", config],
            environment: ExportJobTests.as_(ExportJobTests.alice))
        #expect(asked.status == 0 && asked.output.hasPrefix("job_"), "\(asked.output)")
        let approve = try ProcessTests.run(
            [
                "jobs", "approve", String(asked.output.prefix { !$0.isWhitespace }), "--rows", "0", "--fingerprint",
                "F",
                "--digest", "d", "--config", config,
            ], environment: ExportJobTests.as_(ExportJobTests.alice))
        // Refused for what it is (no jobs:approve), not for the route's secret.
        #expect(approve.status == 2 && approve.output.contains("jobs:approve"), "\(approve.output)")
        #expect(!approve.output.contains("CYBERSOURCE") && !approve.output.contains("ExitCode"), "\(approve.output)")
        let file = "\(directory.path)/cards.csv"
        try "id,card_number\nr1,4111111111111111\n".write(toFile: file, atomically: true, encoding: .utf8)
        let imported = try ProcessTests.run(
            ["import", "--form", "cards", "--token", "importer", "--detach", file, "--config", config])
        #expect(imported.status == 0, "\(imported.output)")
        // A configuration that does not check still says why, not ExitCode.
        try "vault: {store: 3}\n".write(toFile: config, atomically: true, encoding: .utf8)
        let broken = try ProcessTests.run(
            ["export", "--everything", "--recipient", recipient.publicKey, "--config", config],
            environment: ExportJobTests.as_(ExportJobTests.alice))
        #expect(broken.status == 2 && broken.output.contains("vault.store") && !broken.output.contains("ExitCode"))
    }
}
