import CloakTesting
import Foundation
import Testing

/// Issue 57 item 5: `cloak tokens`, `bins` and `keys` read only what they need of the
/// configuration: whoever mints a token needs the vault, not a provider's HMAC secret.
@Suite struct AdminCommandScopeTests {
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
}
