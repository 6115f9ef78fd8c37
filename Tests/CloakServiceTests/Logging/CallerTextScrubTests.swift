import CloakTesting
import Foundation
import Testing

/// Review V, item 7: caller text kept in audit facts and shown in job lists goes through the
/// scrubber (`Redaction.scrub`) first. A Luhn-valid card number given as a token id, a search's
/// `token=` filter or an import file's name was kept as it was in `tokens_create`,
/// `tokens_adopt` and `audit_read` events and the job list. Token ids that look like a value
/// are refused where tokens are made.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct CallerTextScrubTests {
    static let card = "4111111111111111"
    static let dashed = "4111-1111-1111-1111"

    @Test func aCardNumberGivenAsAnIdAFilterOrAFileNameIsNeverKept() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, tokenID: "admin",
            scopes: "tokens:admin, audit:read, aliases:create, jobs:import")
        defer { node.stop() }
        let bearer = [("Authorization", "Bearer \(CloakNode.token)")]
        // Token ids that look like a value are refused, over the API and on the command line.
        for id in [Self.card, Self.dashed, "12345"] {
            let made = try node.client().request(
                "POST", "/admin/tokens", json: #"{"id":"\#(id)","scopes":["aliases:create"]}"#, headers: bearer)
            #expect(made.status == 400, "\(id): \(made.status) \(made.text)")
            #expect(!made.text.contains(Self.card) && !made.text.contains(Self.dashed), "\(made.text)")
            let command = try node.command(["tokens", "create", "--id", id, "--scopes", "aliases:create"])
            #expect(command.status != 0, "\(id): \(command.output)")
            #expect(!command.output.contains(Self.card) && !command.output.contains(Self.dashed), "\(command.output)")
        }
        #expect(
            try node.client().request(
                "POST", "/admin/tokens", json: #"{"id":"app-1","scopes":["aliases:create"]}"#, headers: bearer
            ).status == 201)
        // A search's filters are kept in its own audit event, scrubbed.
        let search = try node.client().request(
            "GET", "/admin/audit?token=\(Self.card)&action=x\(Self.card)", headers: bearer)
        #expect(search.status == 200, "\(search.text)")
        // An import file's name.
        let file = "\(directory.path)/\(Self.card).csv"
        _ = FileManager.default.createFile(
            atPath: file, contents: Data(ImportJobTests.csv(ImportJobTests.cards(2, seed: 61)).utf8))
        let imported = try node.command(["import", "--form", "card_import", "--token", "admin", file])
        #expect(imported.status == 0, "\(imported.output)")
        #expect(!imported.output.contains(Self.card), "\(imported.output)")
        let listed = try node.command(["jobs", "list"])
        #expect(listed.output.contains("[redacted].csv") && !listed.output.contains(Self.card), "\(listed.output)")

        // Nothing of it in any event the store kept, nor in the node's log.
        let events = try node.client().request("GET", "/admin/audit?limit=500", headers: bearer)
        #expect(events.status == 200 && events.text.contains("tokens_create") && events.text.contains("audit_read"))
        #expect(events.text.contains("[redacted]"), "\(events.text)")
        for value in [Self.card, Self.dashed] {
            #expect(!events.text.contains(value), "\(events.text)")
            #expect(!node.log.contains(value))
        }
    }

    @Test func checkConfigRefusesATokenIdThatLooksLikeAValue() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let config = "\(directory.path)/cloak.yaml"
        try TestServer.shippedConfiguration.replacingOccurrences(
            of: "  tokens: []",
            with:
                "  tokens: [{id: \"\(Self.card)\", sha256: \"\(String(repeating: "ab", count: 32))\", scopes: [aliases:create]}]"
        ).write(toFile: config, atomically: true, encoding: .utf8)
        let checked = try ProcessTests.run(["check-config", "--config", config])
        #expect(checked.status == 1, "\(checked.output)")
        #expect(
            checked.output.contains("auth.tokens[0].id") && checked.output.contains("nine digits"), "\(checked.output)")
        #expect(!checked.output.contains(Self.card), "\(checked.output)")
    }
}
