import CloakCore
import CloakCrypto
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakJobs
@testable import CloakService

/// Issue 60: the two-person rule as the configuration, `cloak tokens create` and `POST
/// /admin/tokens` hold every token to it, and the pieces of an export that need no node.
@Suite(.tags(.racy, .processes, .sockets))
struct ExportDutiesTests {
    static let digest = String(repeating: "0", count: 64)

    @Test(arguments: [
        ("[jobs:export, jobs:approve, aliases:reveal], person: a", "no token holds both"),
        ("[jobs:export], person: a", "only beside aliases:reveal"),
        ("[jobs:export, aliases:reveal]", "names its person"),
        ("[jobs:approve]", "names its person"),
        ("[jobs:approve], person: \"a b\"", "expected 1 to 64"),
    ])
    func checkConfigRefusesATokenThatBreaksTheRule(token: String, reason: String) {
        let yaml = "auth: {tokens: [{id: t, sha256: \"\(Self.digest)\", scopes: \(token)}]}"
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        #expect(error?.issues.contains { $0.message.contains(reason) } == true, "\(error?.issues ?? [])")
    }

    @Test func aTokenNamesItsPerson() throws {
        let config = try ServiceConfiguration.parse(
            yaml: """
                auth: {tokens: [{id: t, sha256: "\(Self.digest)", scopes: [jobs:approve], person: bob@example.com},
                  {id: u, sha256: "\(String(repeating: "1", count: 64))", scopes: [aliases:create]}]}
                """)
        #expect(config.auth.map(\.person) == ["bob@example.com", nil])
    }

    /// Minting: a minted token is its minter's person, and names no other; the rule holds for
    /// what is minted; `cloak tokens create` needs --person for these scopes.
    @Test func mintedTokensInheritTheirMintersPerson() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let admin = "alice-admin-secret"
        let hex = Digest.sha256(Array(admin.utf8)).map { String(format: "%02x", $0) }.joined()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            configure: {
                $0.replacingOccurrences(
                    of: "aliases:delete]}]",
                    with: """
                        aliases:delete]}, {id: alice-admin, sha256: "\(hex)", \
                        scopes: [tokens:admin, aliases:reveal, jobs:export], person: alice}]
                        """)
            })
        defer { node.stop() }
        let bearer = [("Authorization", "Bearer \(admin)")]
        let minted = try node.client().request(
            "POST", "/admin/tokens", json: #"{"id":"alice-2","scopes":["jobs:export","aliases:reveal"]}"#,
            headers: bearer)
        #expect(minted.status == 201, "\(minted.text)")
        let named = try node.client().request(
            "POST", "/admin/tokens", json: #"{"id":"carol","scopes":["aliases:reveal"],"person":"carol"}"#,
            headers: bearer)
        #expect(named.status == 400 && named.text.contains("unknown member"), "\(named.text)")
        let bare = try node.client().request(
            "POST", "/admin/tokens", json: #"{"id":"alice-3","scopes":["jobs:export"]}"#, headers: bearer)
        #expect(bare.status == 403 && bare.text.contains("aliases:reveal"), "\(bare.text)")
        let listing = try node.client().request("GET", "/admin/tokens", headers: bearer)
        let tokens = try #require(listing.json?["data"] as? [[String: Any]])
        #expect(tokens.first { $0["id"] as? String == "alice-2" }?["person"] as? String == "alice", "\(listing.text)")

        let noPerson = try node.command(["tokens", "create", "--id", "bob", "--scopes", "jobs:approve"])
        #expect(noPerson.status == 2 && noPerson.output.contains("names its person"), "\(noPerson.output)")
        let both = try node.command([
            "tokens", "create", "--id", "bob", "--scopes", "jobs:approve,jobs:export,aliases:reveal", "--person", "bob",
        ])
        #expect(both.status == 2 && both.output.contains("no token holds both"), "\(both.output)")
        let made = try node.command(["tokens", "create", "--id", "bob", "--scopes", "jobs:approve", "--person", "bob"])
        #expect(made.status == 0, "\(made.output)")
        let listed = try node.command(["tokens", "list"])
        #expect(
            listed.output.contains(#""id":"bob""#) && listed.output.contains(#""person":"bob""#), "\(listed.output)")
    }

    /// Review V, item 9 (OWASP CSV injection): a cell a spreadsheet would run as a formula is
    /// written quoted behind a `'`; any other is as it was.
    @Test(arguments: [
        ("=HYPERLINK(\"x\")", "\"'=HYPERLINK(\"\"x\"\")\""), ("+1 555 0100", "\"'+1 555 0100\""),
        ("-2+3", "\"'-2+3\""), ("@SUM(A1)", "\"'@SUM(A1)\""), ("\tx", "\"'\tx\""), ("\rx", "\"'\rx\""),
        ("4111111111111111", "4111111111111111"), ("a=b", "a=b"), ("", ""),
    ])
    func aCSVCellThatWouldRunAsAFormulaIsWrittenAsText(value: String, written: String) {
        var csv: [UInt8] = []
        ExportSpec.csvField(value, into: &csv)
        #expect(String(decoding: csv, as: UTF8.self) == written)
    }

    @Test func csvAndJSONLinesRowsAreQuotedAsTheirReadersExpect() {
        let row = ExportRow(record: "rec_1", alias: "tok_1", format: .UUID, value: "a,\"b\"\r\nc", createdAt: 0)
        var csv: [UInt8] = []
        let spec = ExportSpec(selection: .everything, layout: .csv, recipient: "", fingerprint: "F", person: "p")
        spec.line(row, into: &csv)
        #expect(
            String(decoding: csv, as: UTF8.self) == "rec_1,tok_1,\"a,\"\"b\"\"\r\nc\",UUID,1970-01-01T00:00:00Z\r\n")
        var jsonl: [UInt8] = []
        var lines = spec
        lines.layout = .jsonl
        lines.line(row, into: &jsonl)
        let object = try? JSONSerialization.jsonObject(with: Data(jsonl)) as? [String: String]
        #expect(object?["value"] == "a,\"b\"\r\nc" && object?["id"] == "rec_1" && object?["alias"] == "tok_1")
        #expect(ExportSpec(stored: spec.encoded) == spec)
        let listed = ExportSpec(
            selection: .aliases(3), layout: .jsonl, recipient: "k", fingerprint: "F", person: "p")
        #expect(ExportSpec(stored: listed.encoded) == listed)
        let matched = ExportSpec(
            selection: .metadata(["b": "2", "a": "1"]), layout: .jsonl, recipient: "k", fingerprint: "F", person: "p")
        #expect(ExportSpec(stored: matched.encoded) == matched)
        let form = ExportSpec(selection: .form("checkout"), layout: .csv, recipient: "k", fingerprint: "F", person: "p")
        #expect(ExportSpec(stored: form.encoded) == form)
        #expect(form.filter(asOf: 1).match == .classifier("form:checkout"))
        #expect(ExportSpec(stored: Array("{}".utf8)) == nil && ExportSpec(stored: [0xFF]) == nil)
    }

    @Test func anAliasListIsReadLineByLine() throws {
        #expect(
            try ExportIntake.aliases(Array(" tok_a \r\n\n tok_b\n".utf8)).map { String(decoding: $0, as: UTF8.self) }
                == ["tok_a", "tok_b"])
        for bad in ["", "\n \n", "tok a", String(repeating: "x", count: 129), "tok_\u{7F}"] {
            #expect(throws: CloakError.self, "\(bad)") { try ExportIntake.aliases(Array(bad.utf8)) }
        }
    }

    @Test func theFilterTakesOnlyWhatAnExportMay() {
        let base = RecordListing(
            id: "rec_1", storage: .persistent, classifiers: ["card"], createdAt: 100, expiresAt: nil, intent: false,
            metadata: ["batch": "a"], aliases: [])
        let filter = ExportFilter(match: .everything, asOf: 100)
        #expect(filter.selects(base, now: 200))
        var volatile = base
        volatile.storage = .volatile
        var intent = base
        intent.intent = true
        var later = base
        later.createdAt = 101
        var expired = base
        expired.expiresAt = 150
        var file = base
        file.classifiers = [Vault.fileClassifier]
        for refused in [volatile, intent, later, expired, file] { #expect(!filter.selects(refused, now: 200)) }
        #expect(ExportFilter(match: .metadata(["batch": "a"]), asOf: 100).selects(base, now: 200))
        #expect(!ExportFilter(match: .metadata(["batch": "b"]), asOf: 100).selects(base, now: 200))
        #expect(ExportFilter(match: .classifier("card"), asOf: 100).selects(base, now: 200))
        #expect(!ExportFilter(match: .classifier("ssn"), asOf: 100).selects(base, now: 200))
    }
}
