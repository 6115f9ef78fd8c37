import CloakCrypto
import CloakTesting
import Foundation
import Testing

/// `cloak serve` on a SoftHSM token, as an operator runs it: keys made by `cloak keys init`,
/// the PIN in a file; kill -9 and serve again; a wrong PIN or another token refuses to start;
/// the PIN never shows.
@Suite(
    .serialized, .enabled(if: SoftHSM.isAvailable, "needs softhsm2 (scripts/install-deps)"), .tags(.processes, .sockets)
)
struct HSMProcessTests {
    @Test func serveOnTheTokenSurvivesKill9AndRefusesAWrongPINOrAnotherToken() throws {
        let hsm = SoftHSM.shared
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let token = SoftHSM.tokens[0]
        let pinFile = "\(directory.path)/pin"
        try SoftHSM.writePIN(token.pin, to: pinFile)
        let object = "kek-\(UUID().uuidString.prefix(8))"
        let uri = hsm.uri(token: token.label, object: object, pinFile: pinFile)
        let store = "sqlite:\(directory.path)/cloak.db"
        let environment = hsm.environment.merging(["CLOAK_VAULT_KEYS": uri, "CLOAK_VAULT_STORE": store]) { _, b in b }

        // serve never makes the key.
        let refused = try ProcessTests.run(["serve"], environment: environment)
        #expect(refused.status == 2 && refused.output.contains("cloak keys init"), "\(refused.output)")
        let initialized = try ProcessTests.run(["keys", "init"], environment: environment)
        #expect(initialized.status == 0, "\(initialized.output)")

        var node = try CloakNode(store: store, directory: directory.path, environment: environment)
        let client = try node.client()
        let bearer = [("Authorization", "Bearer \(CloakNode.token)")]
        let created = try client.request(
            "POST", "/aliases",
            json:
                #"{"data":[{"value":"4111111111111111","format":"UUID"},{"value":"5555555555554444","format":"UUID"}]}"#,
            headers: bearer)
        #expect(created.status == 201 || created.status == 200, "\(created.text)")
        let aliases = (created.json?["data"] as? [[String: Any]] ?? []).compactMap { $0["aliases"] as? [[String: Any]] }
            .compactMap { $0.first?["alias"] as? String }
        #expect(aliases.count == 2)
        // The PIN is read from its file: not in the process's environment, nor in its output.
        let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(node.pid)/environ"))) ?? Data()
        #expect(!environ.isEmpty && !String(decoding: environ, as: UTF8.self).contains(token.pin))
        node.kill9()
        #expect(!node.log.contains(token.pin))

        node = try CloakNode(store: store, directory: directory.path, environment: environment)
        for (alias, value) in zip(aliases, ["4111111111111111", "5555555555554444"]) {
            let revealed = try node.client().request("GET", "/aliases/\(alias)", headers: bearer)
            #expect(
                (revealed.json?["data"] as? [[String: Any]])?.first?["value"] as? String == value, "\(revealed.text)")
        }
        node.stop()
        #expect(!node.log.contains(token.pin))

        // A wrong PIN: exit 2, and the PIN tried is not echoed.
        try SoftHSM.writePIN("0000-nope", to: "\(directory.path)/wrong-pin")
        let wrong = hsm.uri(token: token.label, object: object, pinFile: "\(directory.path)/wrong-pin")
        let wrongRun = try ProcessTests.run(
            ["serve"], environment: environment.merging(["CLOAK_VAULT_KEYS": wrong]) { _, b in b })
        #expect(wrongRun.status == 2 && wrongRun.output.contains("CKR_PIN_INCORRECT"), "\(wrongRun.output)")
        #expect(!wrongRun.output.contains("0000-nope"))
        // Another token (its own PIN, no such key): exit 2.
        let other = SoftHSM.tokens[1]
        try SoftHSM.writePIN(other.pin, to: "\(directory.path)/other-pin")
        let otherURI = hsm.uri(token: other.label, object: object, pinFile: "\(directory.path)/other-pin")
        let otherRun = try ProcessTests.run(
            ["serve"], environment: environment.merging(["CLOAK_VAULT_KEYS": otherURI]) { _, b in b })
        #expect(otherRun.status == 2, "\(otherRun.output)")
        // The status names the token's key, never a key byte.
        let status = try ProcessTests.run(["keys", "status", "--json"], environment: environment)
        #expect(status.output.contains(#""wrapping":"pkcs11""#), "\(status.output)")
    }
}
