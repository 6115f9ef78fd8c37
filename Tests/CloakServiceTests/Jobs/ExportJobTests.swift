import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakJobs

/// Issue 60: export jobs as two people run them: `cloak export` and the API beside real
/// `cloak serve` nodes on a real store, the file decrypted with gpg and PGPy, and imported
/// into a second Cloak under another key ring.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct ExportJobTests {
    /// Alice asks (her token may reveal and export); Bob approves; a second token of Alice's
    /// that may approve shows that a person cannot approve their own export.
    static let alice = "alice-export-secret"
    static let bob = "bob-approve-secret"
    static let aliceApprover = "alice-approve-secret"
    static let nodes = [("Authorization", "Bearer \(CloakNode.token)")]
    static let scopes = "aliases:create, aliases:reveal, aliases:update, aliases:delete, jobs:import, audit:read"

    static func hex(_ secret: String) -> String {
        Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// A node whose configuration lists the three people's tokens beside `nodes`.
    static func node(
        _ directory: TemporaryDirectory, database: String, masterKey: String = CloakNode.masterKey, extra: String = "",
        edits: [(String, String)] = [], store: String? = nil
    ) throws -> CloakNode {
        try CloakNode(
            store: store ?? "sqlite:\(directory.path)/\(database)", directory: directory.path,
            environment: ["CLOAK_MASTER_KEY": masterKey], scopes: scopes,
            configure: { yaml in
                edits.reduce(yaml) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
                    .replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 5\(extra)")
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
        let digest = try #require(counted["selection_digest"] as? String)
        #expect(digest.count == 64)
        // Nothing is written before an approval.
        #expect(
            try sqlite(["\(directory.path)/a.db", "SELECT count(*) FROM job_chunks WHERE part = 3"]).hasPrefix("0"))

        let approve = ["jobs", "approve", id, "--rows", "40", "--fingerprint", fingerprint, "--digest", digest]
        let own = try nodeA.command(approve, environment: Self.as_(Self.aliceApprover))
        #expect(own.status == 2 && own.output.contains("another person approves it"), "\(own.output)")
        let exporter = try nodeA.command(approve, environment: Self.as_(Self.alice))
        #expect(exporter.status == 2 && exporter.output.contains("jobs:approve"), "\(exporter.output)")
        for (rows, shown) in [("41", digest), ("40", String(repeating: "0", count: 64))] {
            let unseen = try nodeA.command(
                ["jobs", "approve", id, "--rows", rows, "--fingerprint", fingerprint, "--digest", shown],
                environment: Self.as_(Self.bob))
            #expect(unseen.status == 2 && unseen.output.contains("read its status first"), "\(unseen.output)")
        }
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
        for value in cards + cvcs.map({ "\"\($0)\"" }) { #expect(!file.text.contains(value)) }

        // gpg, with B's key: a JSON line a card, none of the CVCs.
        let plain = "\(directory.path)/export.jsonl"
        try ImportJobTests.gpg(b.home, ["-o", plain, "-d", encrypted])
        let lines = ImportJobTests.lines(try String(contentsOfFile: plain, encoding: .utf8))
        #expect(lines.count == 40)
        #expect(Set(lines.compactMap { $0["value"] as? String }) == Set(cards))
        #expect(Set(lines.compactMap { $0["alias"] as? String }) == Set(aliases))
        #expect(lines.allSatisfy { ($0["id"] as? String)?.hasPrefix("rec_") == true })
        #expect(lines.allSatisfy { $0["format"] as? String == "UUID" && $0["created_at"] is String })
        // The record an export's row names, and the alias it had here.
        var oldAlias: [String: String] = [:]
        for line in lines { oldAlias[line["id"] as? String ?? ""] = line["alias"] as? String }

        // B imports the encrypted file as it is (its GnuPG home decrypts it).
        let imported = try nodeB.command([
            "import", "--format", "UUID", "--token", "nodes", "--ignore-columns", "alias,format,created_at", encrypted,
        ])
        #expect(imported.status == 0, "\(imported.output)")
        let mapping = ImportJobTests.lines(
            try nodeB.command(["jobs", "mapping", try #require(ImportJobTests.jobID(imported.output))]).output)
        #expect(mapping.count == 40)
        var renamed: [String: String] = [:]
        for line in mapping {
            let old = try #require(oldAlias[line["id"] as? String ?? ""])
            let new = try #require((line["aliases"] as? [String: Any])?["value"] as? String, "\(line)")
            renamed[old] = new
        }
        let valuesB = try Self.reveal(nodeB, Array(renamed.values))
        for (old, new) in renamed { #expect(valuesB[new] == valuesA[old] && valuesB[new] != nil) }
        // B's records are sealed under its own ring: A's key does not open them. Each row's
        // value and its id (A's record id) are B's records, a group a row.
        #expect(
            try sqlite(["\(directory.path)/b.db", "SELECT count(*) FROM records"]).trimmingCharacters(
                in: .whitespacesAndNewlines) == "80")
        #expect(
            try sqlite(["\(directory.path)/b.db", "SELECT count(*) FROM record_groups"]).trimmingCharacters(
                in: .whitespacesAndNewlines) == "40")

        // The steps are audited with who asked, who approved, the digest, the rows and the key.
        for action in ["job_export", "job_export_counted", "job_approve", "job_export_written"] {
            let found = try nodeA.client().request("GET", "/admin/audit?action=\(action)", headers: Self.nodes)
            let events = (found.json?["data"] as? [[String: Any]]) ?? []
            #expect(events.count == 1, "\(action): \(found.text)")
            #expect(found.text.contains(id) && found.text.contains("alice"), "\(action): \(found.text)")
            if action != "job_export" { #expect(found.text.contains(fingerprint), "\(action): \(found.text)") }
            // A CVC as a JSON string: three digits alone also turn up inside the hex digest.
            for value in cards + cvcs.map({ "\"\($0)\"" }) { #expect(!found.text.contains(value)) }
        }
    }

    /// On PostgreSQL the reader reads a page only when GnuPG asks for it (``ExportPages``,
    /// ``JobRunner/preparesAhead``): an export of several pages is whole and in order.
    @Test(.enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL"), .tags(.postgres))
    func anExportOfSeveralPagesOnPostgreSQLIsWhole() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let b = try Self.keypair(directory, "b-gnupg", email: "vault-b@example.com")
        let node = try Self.node(directory, database: "", store: try PostgresTestCluster.freshDatabase())
        defer { node.stop() }
        // Three pages of 500 and a part of a fourth.
        let cards = ImportJobTests.cards(1_600, seed: 71)
        var aliases: [String] = []
        for part in stride(from: 0, to: cards.count, by: 100) {
            aliases += try Self.store(node, cards: Array(cards[part..<(part + 100)]), cvcs: [])
        }
        let asked = try node.command(
            ["export", "--everything", "--recipient", b.publicKey], environment: Self.as_(Self.alice))
        #expect(asked.status == 0, "\(asked.output)")
        let id = try #require(ImportJobTests.jobID(asked.output))
        let counted = Self.json(asked.output)
        #expect(counted["rows"] as? Int == cards.count, "\(asked.output)")
        let approved = try node.command(
            [
                "jobs", "approve", id, "--rows", "\(cards.count)", "--fingerprint",
                try #require(counted["recipient_fingerprint"] as? String), "--digest",
                try #require(counted["selection_digest"] as? String),
            ], environment: Self.as_(Self.bob))
        #expect(approved.status == 0, "\(approved.output)")
        let done = try node.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0 && Self.json(done.output)["exported"] as? Int == cards.count, "\(done.output)")
        let file = try node.client().request("GET", "/admin/jobs/\(id)/export", headers: Self.bearer(Self.alice))
        #expect(file.status == 200, "\(file.text)")
        let encrypted = "\(directory.path)/export.jsonl.gpg"
        _ = FileManager.default.createFile(atPath: encrypted, contents: Data(file.body))
        let plain = "\(directory.path)/export.jsonl"
        try ImportJobTests.gpg(b.home, ["-o", plain, "-d", encrypted])
        let lines = ImportJobTests.lines(try String(contentsOfFile: plain, encoding: .utf8))
        #expect(lines.count == cards.count)
        #expect(Set(lines.compactMap { $0["value"] as? String }) == Set(cards))
        #expect(Set(lines.compactMap { $0["alias"] as? String }) == Set(aliases))
        // In record order, each once.
        let ids = lines.compactMap { $0["id"] as? String }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
    }

    static func post(_ node: CloakNode, _ path: String, _ body: [String: Any], as secret: String) throws
        -> RawHTTPClient.Response
    {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try node.client().request("POST", path, json: json, headers: bearer(secret))
    }

    static func get(_ node: CloakNode, _ path: String, as secret: String) throws -> RawHTTPClient.Response {
        try node.client().request("GET", path, headers: bearer(secret))
    }

    /// The API's flow, with a metadata selection written as CSV and decrypted by PGPy (an
    /// OpenPGP implementation of its own); every hostile body refused with a VGSError; what
    /// each token sees.
    @Test(.enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (PGPy)"), .tags(.python))
    func theAPIAsksApprovesAndGivesTheFileOnlyToItsRequester() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recipient = try Self.keypair(directory, "recipient", email: "recipient@example.com")
        let key = try String(contentsOfFile: recipient.publicKey, encoding: .utf8)
        let node = try Self.node(directory, database: "cloak.db")
        defer { node.stop() }
        let cards = ImportJobTests.cards(20, seed: 71)
        let aliases = try Self.store(node, cards: cards, cvcs: ["321"])
        let cvcAlias = try #require(
            ImportJobTests.lines(try Self.sqliteText(directory, "SELECT json_object('a', alias) FROM aliases"))
                .compactMap { $0["a"] as? String }.first { !aliases.contains($0) })

        // Hostile and malformed bodies: a clear 400 each, and no job.
        let signOnly = "\(directory.path)/sign-only"
        try FileManager.default.createDirectory(
            atPath: signOnly, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try ImportJobTests.gpg(
            signOnly, ["--quick-gen-key", "Signer <signer@example.com>", "ed25519", "sign", "never"])
        let signing = try ImportJobTests.gpg(signOnly, ["--armor", "--export", "signer@example.com"])
        let secret = try ImportJobTests.gpg(
            recipient.home, ["--armor", "--export-secret-keys", "recipient@example.com"])
        let refused: [([String: Any], String)] = [
            (["selection": ["everything": true]], "needs selection and recipient"),
            (["selection": ["everything": true], "recipient": "hello"], "ASCII-armored OpenPGP public key"),
            (["selection": ["everything": true], "recipient": secret], "ASCII-armored OpenPGP public key"),
            (["selection": ["everything": true], "recipient": signing], "cannot be encrypted to"),
            (
                ["selection": ["everything": true], "recipient": key + "\n" + signing],
                "one ASCII-armored OpenPGP public key block"
            ),
            (["selection": ["everything": false], "recipient": key], "selection must be one of"),
            (["selection": ["metadata": [:] as [String: String]], "recipient": key], "selection must be one of"),
            (["selection": ["everything": true, "classifier": "x"], "recipient": key], "selection must be one of"),
            (["selection": ["aliases": 3], "recipient": key], "array"),
            (["selection": ["aliases": Array(repeating: "tok_x", count: 10_001)], "recipient": key], "at most"),
            (["selection": ["aliases": ["a b"]], "recipient": key], "not an alias"),
            (["selection": ["everything": true], "recipient": key, "layout": "xml"], "layout is one of"),
            (["selection": ["form": "nosuch"], "recipient": key], "no form nosuch"),
            (
                ["selection": ["aliases": ["tok_x"]], "recipient": key, "layout": "rows"],
                "not a list of aliases"
            ),
            (["selection": ["everything": true], "recipient": key, "to": "me"], "unknown member"),
        ]
        for (body, reason) in refused {
            let answer = try Self.post(node, "/admin/jobs/exports", body, as: Self.alice)
            #expect(answer.status == 400 && answer.text.contains(reason), "\(reason): \(answer.status) \(answer.text)")
            #expect(answer.json?["error"] != nil || answer.text.contains("description"), "\(answer.text)")
        }
        #expect((try Self.get(node, "/admin/jobs", as: Self.alice).json?["data"] as? [Any])?.isEmpty == true)
        // Only jobs:export asks.
        for secret in [Self.bob, CloakNode.token] {
            let answer = try Self.post(
                node, "/admin/jobs/exports", ["selection": ["everything": true], "recipient": key], as: secret)
            #expect(answer.status == 403, "\(answer.text)")
        }

        let asked = try Self.post(
            node, "/admin/jobs/exports",
            ["selection": ["metadata": ["batch": "a"]], "layout": "csv", "recipient": key], as: Self.alice)
        #expect(asked.status == 202, "\(asked.text)")
        let id = try #require(asked.json?["id"] as? String)
        try ImportJobTests().poll {
            try Self.get(node, "/admin/jobs/\(id)", as: Self.alice).json?["state"] as? String == "awaiting_approval"
        }
        // Bob sees it (and lists it); the importing token does not.
        let seen = try #require(try Self.get(node, "/admin/jobs/\(id)", as: Self.bob).json)
        #expect(seen["rows"] as? Int == 10 && seen["layout"] as? String == "csv", "\(seen)")
        #expect((seen["selection"] as? [String: Any])?["metadata"] as? [String: String] == ["batch": "a"])
        let fingerprint = try #require(seen["recipient_fingerprint"] as? String)
        let digest = try #require(seen["selection_digest"] as? String)
        let listed = try Self.get(node, "/admin/jobs", as: Self.bob).json?["data"] as? [[String: Any]]
        #expect(listed?.map { $0["id"] as? String } == [id])
        #expect(try Self.get(node, "/admin/jobs/\(id)", as: CloakNode.token).status == 404)

        let approval = ["rows": 10, "fingerprint": fingerprint, "selection_digest": digest] as [String: Any]
        // Malformed approvals: a 400 each (a job that is none, or not an export, a 404), and the
        // job still waits.
        let malformed: [([String: Any], String)] = [
            ([:], "needs rows, fingerprint and selection_digest"),
            (["rows": -1, "fingerprint": fingerprint, "selection_digest": digest], "row count"),
            (["rows": "10", "fingerprint": fingerprint, "selection_digest": digest], "row count"),
            (["rows": 10, "fingerprint": 7, "selection_digest": digest], "fingerprint must be a string"),
            (approval.merging(["by": "me"]) { $1 }, "unknown member"),
        ]
        for (body, reason) in malformed {
            let answer = try Self.post(node, "/admin/jobs/\(id)/approve", body, as: Self.bob)
            #expect(answer.status == 400 && answer.text.contains(reason), "\(reason): \(answer.text)")
        }
        let notObject = try node.client().request(
            "POST", "/admin/jobs/\(id)/approve", json: "[1]", headers: Self.bearer(Self.bob))
        #expect(notObject.status == 400, "\(notObject.text)")
        for path in ["/admin/jobs/job_nosuch/approve", "/admin/jobs/not-a-job/approve"] {
            #expect(try Self.post(node, path, approval, as: Self.bob).status == 404, "\(path)")
        }
        #expect(
            try Self.get(node, "/admin/jobs/\(id)", as: Self.alice).json?["state"] as? String == "awaiting_approval")
        #expect(try Self.post(node, "/admin/jobs/\(id)/approve", approval, as: Self.alice).status == 403)
        #expect(try Self.post(node, "/admin/jobs/\(id)/approve", approval, as: Self.aliceApprover).status == 403)
        let wrong = try Self.post(
            node, "/admin/jobs/\(id)/approve",
            [
                "rows": 10, "fingerprint": (fingerprint.hasPrefix("0") ? "1" : "0") + fingerprint.dropFirst(),
                "selection_digest": digest,
            ],
            as: Self.bob)
        #expect(wrong.status == 400 && wrong.text.contains("read its status first"), "\(wrong.text)")
        // Nothing written while it waits.
        #expect(try Self.get(node, "/admin/jobs/\(id)/export", as: Self.alice).status == 400)
        #expect(try Self.sqliteText(directory, "SELECT count(*) FROM job_chunks WHERE part = 3").hasPrefix("0"))
        let approved = try Self.post(node, "/admin/jobs/\(id)/approve", approval, as: Self.bob)
        #expect(approved.status == 200, "\(approved.text)")
        #expect(try Self.post(node, "/admin/jobs/\(id)/approve", approval, as: Self.bob).status == 400)
        try ImportJobTests().poll {
            try Self.get(node, "/admin/jobs/\(id)", as: Self.alice).json?["state"] as? String == "done"
        }
        #expect(try Self.get(node, "/admin/jobs/\(id)/export", as: Self.bob).status == 403)
        let file = try Self.get(node, "/admin/jobs/\(id)/export", as: Self.alice)
        #expect(file.status == 200, "\(file.text)")
        #expect(file.header("Content-Disposition")?.contains("\(id).csv.gpg") == true)

        // PGPy decrypts it with the recipient's private key.
        let decrypted = try TestPython.run(
            """
            import json, sys, warnings
            warnings.filterwarnings("ignore")
            import pgpy
            key, _ = pgpy.PGPKey.from_file(sys.argv[1])
            message = pgpy.PGPMessage.from_blob(open(sys.argv[2], "rb").read())
            text = key.decrypt(message).message
            if isinstance(text, (bytes, bytearray)):
                text = bytes(text).decode()
            print(json.dumps({"text": text}))
            """, inputs: [Array(secret.utf8), file.body])
        let csv = try #require((decrypted as? [String: Any])?["text"] as? String)
        let rows = csv.split(separator: "\r\n").map { $0.split(separator: ",").map(String.init) }
        #expect(rows.first == ["id", "alias", "value", "format", "created_at"])
        #expect(Set(rows.dropFirst().map { $0[2] }) == Set(cards.prefix(10)))
        #expect(Set(rows.dropFirst().map { $0[1] }) == Set(aliases.prefix(10)))

        // A list: the aliases found, the rest (unknown, a CVC's) counted missing.
        let list = try Self.post(
            node, "/admin/jobs/exports",
            ["selection": ["aliases": [aliases[0], aliases[19], "tok_nope", cvcAlias]], "recipient": key],
            as: Self.alice)
        #expect(list.status == 202, "\(list.text)")
        let listID = try #require(list.json?["id"] as? String)
        try ImportJobTests().poll {
            try Self.get(node, "/admin/jobs/\(listID)", as: Self.alice).json?["state"] as? String
                == "awaiting_approval"
        }
        let listStatus = try #require(try Self.get(node, "/admin/jobs/\(listID)", as: Self.bob).json)
        #expect(listStatus["rows"] as? Int == 2 && listStatus["missing"] as? Int == 2, "\(listStatus)")
        // A record that leaves the selection between the count and the write: the job fails
        // before its file is whole (nothing to download), however the approval read.
        let moving = try Self.post(
            node, "/admin/jobs/exports", ["selection": ["metadata": ["batch": "b"]], "recipient": key], as: Self.alice)
        let movingID = try #require(moving.json?["id"] as? String)
        try ImportJobTests().poll {
            try Self.get(node, "/admin/jobs/\(movingID)", as: Self.alice).json?["state"] as? String
                == "awaiting_approval"
        }
        let counted = try #require(try Self.get(node, "/admin/jobs/\(movingID)", as: Self.bob).json)
        #expect(counted["rows"] as? Int == 10, "\(counted)")
        let changed = try node.client().request(
            "PUT", "/aliases/\(aliases[19])", json: #"{"data":{"metadata":{"batch":"c"}}}"#, headers: Self.nodes)
        #expect(changed.status == 204, "\(changed.text)")
        let stale = try Self.post(
            node, "/admin/jobs/\(movingID)/approve",
            ["rows": 10, "fingerprint": fingerprint, "selection_digest": try #require(counted["selection_digest"])],
            as: Self.bob)
        #expect(stale.status == 200, "\(stale.text)")
        try ImportJobTests().poll {
            try Self.get(node, "/admin/jobs/\(movingID)", as: Self.alice).json?["state"] as? String == "failed"
        }
        let failed = try Self.get(node, "/admin/jobs/\(movingID)", as: Self.alice)
        #expect(failed.text.contains("the selection changed since it was counted and approved"), "\(failed.text)")
        #expect(try Self.get(node, "/admin/jobs/\(movingID)/export", as: Self.alice).status == 400)

        // Cancelled by its requester, it can no longer be approved.
        #expect(try Self.post(node, "/admin/jobs/\(listID)/cancel", [:], as: Self.alice).status == 200)
        let late = try Self.post(
            node, "/admin/jobs/\(listID)/approve", ["rows": 2, "fingerprint": fingerprint, "selection_digest": digest],
            as: Self.bob)
        #expect(late.status == 400 && late.text.contains("cancelled"), "\(late.text)")
    }

    /// A database writer without the key ring cannot make an export run: a job pushed past its
    /// approval is counted again and waits; a forged approval, or a recipient changed in the
    /// row, fails the job; nothing is ever written. An export nobody approves expires and is
    /// deleted with everything it held.
    @Test func anExportNobodyApprovesWritesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recipient = try Self.keypair(directory, "recipient", email: "recipient@example.com")
        var node = try Self.node(directory, database: "cloak.db")
        defer { node.stop() }
        _ = try Self.store(node, cards: ImportJobTests.cards(6, seed: 72), cvcs: [])
        func ask() throws -> (id: String, status: [String: Any]) {
            let run = try node.command(
                ["export", "--everything", "--recipient", recipient.publicKey], environment: Self.as_(Self.alice))
            #expect(run.status == 0, "\(run.output)")
            return (try #require(ImportJobTests.jobID(run.output)), Self.json(run.output))
        }
        func state(_ id: String) throws -> String {
            try Self.sqliteText(directory, "SELECT state FROM jobs WHERE id = '\(id)'")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func written() throws -> String {
            try Self.sqliteText(directory, "SELECT count(*) FROM job_chunks WHERE part = 3")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }

        // Pushed to queued without an approval: counted again, and waiting again (with an
        // expiry: the update took it away).
        let pushed = try ask()
        _ = try Self.sqliteText(
            directory, "UPDATE jobs SET state = 'queued', expires_at = NULL WHERE id = '\(pushed.id)'")
        try ImportJobTests().poll {
            try state(pushed.id) == "awaiting_approval"
                && !Self.sqliteText(directory, "SELECT expires_at IS NULL FROM jobs WHERE id = '\(pushed.id)'")
                    .hasPrefix("1")
        }
        #expect(try written() == "0")

        // A forged approval: the job fails, nothing written.
        let forged = try ask()
        _ = try Self.sqliteText(
            directory,
            """
            INSERT OR REPLACE INTO job_chunks (job, part, idx, sealed) VALUES ('\(forged.id)', 5, 0, randomblob(80));
            UPDATE jobs SET state = 'queued', expires_at = NULL WHERE id = '\(forged.id)';
            """)
        try ImportJobTests().poll { try state(forged.id) == "failed" }
        #expect(try written() == "0")

        // Another recipient's fingerprint written into the row: the job's key no longer opens.
        let redirected = try ask()
        let fingerprint = try #require(redirected.status["recipient_fingerprint"] as? String)
        _ = try Self.sqliteText(
            directory,
            """
            UPDATE jobs SET spec = CAST(replace(CAST(spec AS TEXT), '\(fingerprint)', '\(String(repeating: "A", count: 40))') AS BLOB)
            WHERE id = '\(redirected.id)'
            """)
        let refused = try node.command(
            [
                "jobs", "approve", redirected.id, "--rows", "6", "--fingerprint", String(repeating: "A", count: 40),
                "--digest", try #require(redirected.status["selection_digest"] as? String),
            ],
            environment: Self.as_(Self.bob))
        #expect(refused.status == 2 && refused.output.contains("altered"), "\(refused.output)")

        // Past jobs.approval_ttl_s: refused, then deleted with its chunks by the next sweep
        // (a node sweeps as it starts).
        let expired = try ask()
        _ = try Self.sqliteText(directory, "UPDATE jobs SET expires_at = 1 WHERE id = '\(expired.id)'")
        let late = try node.command(
            [
                "jobs", "approve", expired.id, "--rows", "6", "--fingerprint", fingerprint, "--digest",
                try #require(expired.status["selection_digest"] as? String),
            ],
            environment: Self.as_(Self.bob))
        #expect(late.status == 2 && late.output.contains("approval_ttl_s"), "\(late.output)")
        node.stop()
        node = try Self.node(directory, database: "cloak.db")
        try ImportJobTests().poll {
            try Self.sqliteText(directory, "SELECT count(*) FROM jobs WHERE id = '\(expired.id)'").hasPrefix("0")
                && Self.sqliteText(directory, "SELECT count(*) FROM job_chunks WHERE job = '\(expired.id)'")
                    .hasPrefix("0")
        }
        #expect(try written() == "0")
    }

    /// `jobs.max_open_per_token`: a token with that many jobs not ended is refused another
    /// (429, over the API and on the command line) until one ends.
    @Test func aTokenHoldsAtMostItsQuotaOfOpenJobs() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recipient = try Self.keypair(directory, "recipient", email: "recipient@example.com")
        let key = try String(contentsOfFile: recipient.publicKey, encoding: .utf8)
        let node = try Self.node(
            directory, database: "cloak.db", edits: [("max_open_per_token: 8", "max_open_per_token: 1")])
        defer { node.stop() }
        let body: [String: Any] = ["selection": ["everything": true], "recipient": key]
        let first = try Self.post(node, "/admin/jobs/exports", body, as: Self.alice)
        #expect(first.status == 202, "\(first.text)")
        let second = try Self.post(node, "/admin/jobs/exports", body, as: Self.alice)
        #expect(second.status == 429 && second.text.contains("max_open_per_token"), "\(second.text)")
        let command = try node.command(
            ["export", "--everything", "--recipient", recipient.publicKey], environment: Self.as_(Self.alice))
        #expect(command.status == 2 && command.output.contains("max_open_per_token"), "\(command.output)")
        let id = try #require(first.json?["id"] as? String)
        #expect(try Self.post(node, "/admin/jobs/\(id)/cancel", [:], as: Self.alice).status == 200)
        #expect(try Self.post(node, "/admin/jobs/exports", body, as: Self.alice).status == 202)
    }

    static func sqliteText(_ directory: TemporaryDirectory, _ sql: String, database: String = "cloak.db") throws
        -> String
    {
        try ImportJobTests().sqlite(["\(directory.path)/\(database)", sql])
    }

    func sqlite(_ arguments: [String]) throws -> String { try ImportJobTests().sqlite(arguments) }
}
