import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

/// Issue 60: export jobs as two people run them: `cloak export` and the API beside real
/// `cloak serve` nodes on a real store, the file decrypted with gpg and PGPy, and imported
/// into a second Cloak under another key ring.
@Suite(.serialized)
struct ExportJobTests {
    /// Alice asks (her token may reveal and export); Bob approves; a second token of Alice's
    /// that may approve shows that a person cannot approve their own export.
    static let alice = "alice-export-secret"
    static let bob = "bob-approve-secret"
    static let aliceApprover = "alice-approve-secret"
    static let nodes = [("Authorization", "Bearer \(CloakNode.token)")]
    static let scopes = "aliases:create, aliases:reveal, jobs:import, audit:read"

    static func hex(_ secret: String) -> String { Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined() }

    /// A node whose configuration lists the three people's tokens beside `nodes`.
    static func node(
        _ directory: TemporaryDirectory, database: String, masterKey: String = CloakNode.masterKey, extra: String = ""
    ) throws -> CloakNode {
        try CloakNode(
            store: "sqlite:\(directory.path)/\(database)", directory: directory.path,
            environment: ["CLOAK_MASTER_KEY": masterKey], scopes: scopes,
            configure: {
                $0.replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 5\(extra)")
                    .replacingOccurrences(
                        of: "scopes: [\(scopes)]}]",
                        with: """
                            scopes: [\(scopes)]}, \
                            {id: alice, sha256: "\(hex(alice))", scopes: [aliases:reveal, jobs:export], person: alice}, \
                            {id: bob, sha256: "\(hex(bob))", scopes: [jobs:approve], person: bob}, \
                            {id: alice-approves, sha256: "\(hex(aliceApprover))", scopes: [jobs:approve], person: alice}]
                            """)
            })
    }

    static func as_(_ secret: String) -> [String: String] { ["CLOAK_TOKEN": secret] }
    static func bearer(_ secret: String) -> [(String, String)] { [("Authorization", "Bearer \(secret)")] }

    /// Stores `cards` (PERSISTENT, metadata `batch` a or b by halves) and `cvcs` (VOLATILE) on
    /// `node`; the cards' aliases in order.
    static func store(_ node: CloakNode, cards: [String], cvcs: [String]) throws -> [String] {
        let items =
            cards.enumerated().map {
                #"{"value":"\#($0.element)","format":"UUID","metadata":{"batch":"\#($0.offset < cards.count / 2 ? "a" : "b")"}}"#
            } + cvcs.map { #"{"value":"\#($0)","format":"UUID","storage":"VOLATILE"}"# }
        let created = try node.client().request(
            "POST", "/aliases", json: #"{"data":[\#(items.joined(separator: ","))]}"#, headers: nodes)
        #expect(created.status == 201, "\(created.text)")
        let data = try #require(created.json?["data"] as? [[String: Any]])
        return data.prefix(cards.count).map { (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String) ?? "" }
    }

    /// Reveals `aliases` on `node`: alias → value.
    static func reveal(_ node: CloakNode, _ aliases: [String]) throws -> [String: String] {
        var out: [String: String] = [:]
        for page in stride(from: 0, to: aliases.count, by: 50) {
            let slice = aliases[page..<min(page + 50, aliases.count)]
            let answer = try node.client().request(
                "GET", "/aliases?q=\(slice.joined(separator: ","))", headers: nodes)
            let data = try #require(answer.json?["data"] as? [String: Any], "\(answer.text)")
            for (alias, record) in data { out[alias] = (record as? [String: Any])?["value"] as? String }
        }
        return out
    }

    /// A GnuPG home with an encryption key for `email`, and its public key, armored.
    static func keypair(_ directory: TemporaryDirectory, _ name: String, email: String) throws -> (
        home: String, publicKey: String
    ) {
        let home = "\(directory.path)/\(name)"
        try FileManager.default.createDirectory(
            atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try ImportJobTests.gpg(home, ["--quick-gen-key", "Cloak Export <\(email)>", "rsa2048", "encrypt", "never"])
        let publicKey = "\(directory.path)/\(name).asc"
        try ImportJobTests.gpg(home, ["--armor", "-o", publicKey, "--export", email])
        return (home, publicKey)
    }

    static func json(_ output: String) -> [String: Any] { ImportJobTests.lines(output).last ?? [:] }

    /// The round trip the issue asks for: Alice exports A's cards to B's operator key, Bob
    /// approves after reading the count and fingerprint (Alice's own approval refused), B
    /// imports the encrypted file as it is, and every new alias reveals the value its old one
    /// revealed on A. No VOLATILE value leaves A.
    @Test func anApprovedExportImportsIntoASecondCloakWithTheSameValues() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let b = try Self.keypair(directory, "b-gnupg", email: "vault-b@example.com")
        let nodeA = try Self.node(directory, database: "a.db")
        defer { nodeA.stop() }
        let nodeB = try Self.node(
            directory, database: "b.db", masterKey: String(repeating: "0b", count: 32),
            extra: "\n  gnupg_home: \(b.home)")
        defer { nodeB.stop() }
        let cards = ImportJobTests.cards(40, seed: 70)
        let cvcs = ["123", "456", "789"]
        let aliases = try Self.store(nodeA, cards: cards, cvcs: cvcs)
        let valuesA = try Self.reveal(nodeA, aliases)
        #expect(valuesA.count == 40)

        let asked = try nodeA.command(
            ["export", "--everything", "--recipient", b.publicKey], environment: Self.as_(Self.alice))
        #expect(asked.status == 0, "\(asked.output)")
        let id = try #require(ImportJobTests.jobID(asked.output))
        let counted = Self.json(asked.output)
        #expect(counted["state"] as? String == "awaiting_approval", "\(asked.output)")
        #expect(counted["rows"] as? Int == 40 && counted["requester_person"] as? String == "alice")
        let fingerprint = try #require(counted["recipient_fingerprint"] as? String)
        #expect((counted["selection_digest"] as? String)?.count == 64)
        // Nothing is written before an approval.
        #expect(try sqlite(["\(directory.path)/a.db", "SELECT count(*) FROM job_chunks WHERE part = 3"]).hasPrefix("0"))

        let approve = ["jobs", "approve", id, "--rows", "40", "--fingerprint", fingerprint]
        let own = try nodeA.command(approve, environment: Self.as_(Self.aliceApprover))
        #expect(own.status == 2 && own.output.contains("another person approves it"), "\(own.output)")
        let exporter = try nodeA.command(approve, environment: Self.as_(Self.alice))
        #expect(exporter.status == 2 && exporter.output.contains("jobs:approve"), "\(exporter.output)")
        let unseen = try nodeA.command(
            ["jobs", "approve", id, "--rows", "41", "--fingerprint", fingerprint], environment: Self.as_(Self.bob))
        #expect(unseen.status == 2 && unseen.output.contains("read its status first"), "\(unseen.output)")
        let nobody = try nodeA.command(approve, environment: Self.as_("not-a-token"))
        #expect(nobody.status == 2, "\(nobody.output)")
        let approved = try nodeA.command(approve, environment: Self.as_(Self.bob))
        #expect(approved.status == 0, "\(approved.output)")
        #expect(Self.json(approved.output)["state"] as? String == "queued")

        try ImportJobTests().poll {
            Self.json(try nodeA.command(["jobs", "status", id]).output)["state"] as? String == "done"
        }
        let status = Self.json(try nodeA.command(["jobs", "status", id]).output)
        #expect(status["exported"] as? Int == 40, "\(status)")
        #expect((status["approval"] as? [String: Any])?["person"] as? String == "bob")
        // The file, over the API, to Alice only.
        let file = try nodeA.client().request("GET", "/admin/jobs/\(id)/export", headers: Self.bearer(Self.alice))
        #expect(file.status == 200 && file.header("Content-Type") == "application/pgp-encrypted", "\(file.text)")
        #expect(try nodeA.client().request("GET", "/admin/jobs/\(id)/export", headers: Self.nodes).status == 403)
        let encrypted = "\(directory.path)/export.jsonl.gpg"
        _ = FileManager.default.createFile(atPath: encrypted, contents: Data(file.body))
        for value in cards + cvcs { #expect(!file.text.contains(value)) }

        // gpg, with B's key: a JSON line a card, none of the CVCs.
        let plain = "\(directory.path)/export.jsonl"
        try ImportJobTests.gpg(b.home, ["-o", plain, "-d", encrypted])
        let lines = ImportJobTests.lines(try String(contentsOfFile: plain, encoding: .utf8))
        #expect(lines.count == 40)
        #expect(Set(lines.compactMap { $0["value"] as? String }) == Set(cards))
        #expect(Set(lines.compactMap { $0["id"] as? String }) == Set(aliases))
        #expect(lines.allSatisfy { $0["format"] as? String == "UUID" && $0["created_at"] is String })

        // B imports the encrypted file as it is (its GnuPG home decrypts it).
        let imported = try nodeB.command([
            "import", "--format", "UUID", "--token", "nodes", "--ignore-columns", "format,created_at", encrypted,
        ])
        #expect(imported.status == 0, "\(imported.output)")
        let mapping = ImportJobTests.lines(
            try nodeB.command(["jobs", "mapping", try #require(ImportJobTests.jobID(imported.output))]).output)
        #expect(mapping.count == 40)
        var renamed: [String: String] = [:]
        for line in mapping {
            let old = try #require(line["id"] as? String)
            let new = try #require((line["aliases"] as? [String: Any])?["value"] as? String, "\(line)")
            renamed[old] = new
        }
        let valuesB = try Self.reveal(nodeB, Array(renamed.values))
        for (old, new) in renamed { #expect(valuesB[new] == valuesA[old] && valuesB[new] != nil) }
        // B's records are sealed under its own ring: A's key does not open them.
        #expect(
            try sqlite(["\(directory.path)/b.db", "SELECT count(*) FROM records"]).trimmingCharacters(
                in: .whitespacesAndNewlines) == "40")

        // The steps are audited with who asked, who approved, the digest, the rows and the key.
        for action in ["job_export", "job_export_counted", "job_approve", "job_export_written"] {
            let found = try nodeA.client().request("GET", "/admin/audit?action=\(action)", headers: Self.nodes)
            let events = (found.json?["data"] as? [[String: Any]]) ?? []
            #expect(events.count == 1, "\(action): \(found.text)")
            #expect(found.text.contains(id) && found.text.contains("alice"), "\(action): \(found.text)")
            if action != "job_export" { #expect(found.text.contains(fingerprint), "\(action): \(found.text)") }
            for value in cards + cvcs { #expect(!found.text.contains(value)) }
        }
    }

    func sqlite(_ arguments: [String]) throws -> String { try ImportJobTests().sqlite(arguments) }
}
