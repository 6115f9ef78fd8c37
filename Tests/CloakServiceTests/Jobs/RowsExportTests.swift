import CloakCore
import CloakTesting
import Foundation
import Testing

/// Issue 76: a provider's rows (number, expiry, name, the customer's id) imported, exported in
/// `layout: rows` by two people, decrypted by GnuPG and by PGPy to the same rows, and imported
/// as they are into a second Cloak.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct RowsExportTests {
    static let provider = """
        customer_id,pan,expiry,name
        cus_001,4242424242424242,12/29,Ada Lovelace
        cus_002,5555555555554444,01/30,Grace Hopper
        cus_003,378282246310005,03/31,"Turing, Alan"
        cus_004,4000056655665556,13/29,Bad Month
        cus_006,4242424242424242,12/29,Ada's Twin

        """
    /// The rows the import takes (cus_004's month is no month), as a rows export gives them.
    static let expected: [String: [String: String]] = [
        "cus_001": ["card_number": "4242424242424242", "exp_date": "12/29", "name": "Ada Lovelace"],
        "cus_002": ["card_number": "5555555555554444", "exp_date": "01/30", "name": "Grace Hopper"],
        "cus_003": ["card_number": "378282246310005", "exp_date": "03/31", "name": "Turing, Alan"],
        "cus_006": ["card_number": "4242424242424242", "exp_date": "12/29", "name": "Ada's Twin"],
    ]

    /// Runs the export Alice asks for and Bob approves; its status as counted, and the file
    /// (downloaded by Alice).
    static func export(_ node: CloakNode, _ arguments: [String]) throws -> (status: [String: Any], file: [UInt8]) {
        let asked = try node.command(["export"] + arguments, environment: ExportJobTests.as_(ExportJobTests.alice))
        #expect(asked.status == 0, "\(asked.output)")
        let id = try #require(ImportJobTests.jobID(asked.output))
        let counted = ExportJobTests.json(asked.output)
        let approve = try node.command(
            [
                "jobs", "approve", id, "--rows", "\(counted["rows"] as? Int ?? -1)", "--fingerprint",
                counted["recipient_fingerprint"] as? String ?? "", "--digest",
                counted["selection_digest"] as? String ?? "",
            ], environment: ExportJobTests.as_(ExportJobTests.bob))
        #expect(approve.status == 0, "\(approve.output)")
        let done = try node.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0, "\(done.output)")
        let file = try node.client().request(
            "GET", "/admin/jobs/\(id)/export", headers: ExportJobTests.bearer(ExportJobTests.alice))
        #expect(file.status == 200, "\(file.text)")
        return (counted, file.body)
    }

    @Test func aProvidersRowsLeaveAsTheyCameAndMoveToASecondCloak() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let b = try ExportJobTests.keypair(directory, "b-gnupg", email: "vault-b@example.com")
        let nodeA = try ExportJobTests.node(directory, database: "a.db")
        defer { nodeA.stop() }
        let nodeB = try ExportJobTests.node(
            directory, database: "b.db", masterKey: String(repeating: "0b", count: 32),
            extra: "\n  gnupg_home: \(b.home)")
        defer { nodeB.stop() }

        let file = ImportJobTests.write(Self.provider, directory, "provider.csv")
        let imported = try nodeA.command([
            "import", "--form", "card_import", "--token", "nodes", "--map",
            "customer_id=id,pan=card_number,expiry=exp_date", file,
        ])
        #expect(imported.status == 0, "\(imported.output)")
        let job = try #require(ImportJobTests.jobID(imported.output))
        let mapping = ImportJobTests.lines(try nodeA.command(["jobs", "mapping", job]).output)
        #expect(mapping.map { $0["id"] as? String } == ["cus_001", "cus_002", "cus_003", "cus_006"])
        #expect(Set(mapping.compactMap { $0["group"] as? String }).count == 4)
        // A value stored alone is a group of one in an export of everything.
        let alone = try nodeA.client().request(
            "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111","format":"UUID"}]}"#,
            headers: ExportJobTests.nodes)
        #expect(alone.status == 201 && alone.json?["group"] == nil, "\(alone.text)")

        // The form's rows, as JSON Lines.
        let encrypted = "\(directory.path)/rows.jsonl.gpg"
        let (counted, bytes) = try Self.export(
            nodeA, ["--form", "card_import", "--layout", "rows", "--recipient", b.publicKey])
        #expect(counted["rows"] as? Int == 4 && counted["layout"] as? String == "rows", "\(counted)")
        #expect(counted["fields"] as? [String] == ["id", "card_number", "exp_date", "name"], "\(counted)")
        #expect(counted["groups_of_one"] as? Int == 0 && counted["partial_groups"] as? Int == 0)
        _ = FileManager.default.createFile(atPath: encrypted, contents: Data(bytes))
        for value in ["4242424242424242", "Ada Lovelace", "cus_001"] {
            #expect(!String(decoding: bytes, as: UTF8.self).contains(value))
        }
        let plain = "\(directory.path)/rows.jsonl"
        try ImportJobTests.gpg(b.home, ["-o", plain, "-d", encrypted])
        let rows = ImportJobTests.lines(try String(contentsOfFile: plain, encoding: .utf8))
        #expect(rows.count == 4)
        var byID: [String: [String: String]] = [:]
        for row in rows {
            let id = try #require(row["id"] as? String)
            #expect((row["cloak:group"] as? String)?.hasPrefix("grp_") == true)
            #expect(row["cloak:metadata"] as? String == "{}")
            byID[id] = ["card_number", "exp_date", "name"].reduce(into: [:]) { $0[$1] = row[$1] as? String }
        }
        #expect(byID == Self.expected)

        // PGPy, an OpenPGP implementation of its own, reads the same rows.
        if TestPython.isAvailable {
            let secret = try ImportJobTests.gpg(b.home, ["--armor", "--export-secret-keys", "vault-b@example.com"])
            let decrypted = try TestPython.run(
                """
                import json, sys, warnings
                warnings.filterwarnings("ignore")
                import pgpy
                key, _ = pgpy.PGPKey.from_file(sys.argv[1])
                text = key.decrypt(pgpy.PGPMessage.from_blob(open(sys.argv[2], "rb").read())).message
                if isinstance(text, (bytes, bytearray)):
                    text = bytes(text).decode()
                print(json.dumps({"rows": [json.loads(line) for line in text.splitlines() if line]}))
                """, inputs: [Array(secret.utf8), bytes])
            let pgpyRows = try #require((decrypted as? [String: Any])?["rows"] as? [[String: String]])
            var pgpyByID: [String: [String: String]] = [:]
            for row in pgpyRows {
                pgpyByID[row["id"] ?? ""] = ["card_number", "exp_date", "name"].reduce(into: [:]) { $0[$1] = row[$1] }
            }
            #expect(pgpyByID == Self.expected)
        }

        // B imports the file as it is: its columns are the form's fields.
        let moved = try nodeB.command([
            "import", "--form", "card_import", "--token", "nodes", "--ignore-columns", "cloak:group,cloak:metadata",
            encrypted,
        ])
        #expect(moved.status == 0, "\(moved.output)")
        let movedMapping = ImportJobTests.lines(
            try nodeB.command(["jobs", "mapping", try #require(ImportJobTests.jobID(moved.output))]).output)
        #expect(Set(movedMapping.compactMap { $0["id"] as? String }) == Set(Self.expected.keys))
        let aliasesB = movedMapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] }
        let valuesB = try ExportJobTests.reveal(nodeB, aliasesB)
        for line in movedMapping {
            let id = try #require(line["id"] as? String)
            let alias = try #require((line["aliases"] as? [String: String])?["card_number"])
            #expect(valuesB[alias] == Self.expected[id]?["card_number"])
        }

        // A call's values with a VOLATILE one: the group goes without it, and the status says so.
        let call = try nodeA.client().request(
            "POST", "/aliases",
            json: #"""
                {"data":[{"value":"5105105105105100","format":"UUID","field":"card_number","metadata":{"customer":"c7"}},\#
                {"value":"09/31","field":"exp_date"},{"value":"one-time","storage":"VOLATILE","field":"nonce"}]}
                """#, headers: ExportJobTests.nodes)
        #expect(call.status == 201 && (call.json?["group"] as? String)?.hasPrefix("grp_") == true, "\(call.text)")

        // Everything, as CSV: the imported rows, the call's, and the value stored alone.
        let (all, csvFile) = try Self.export(
            nodeA, ["--everything", "--layout", "rows_csv", "--recipient", b.publicKey])
        #expect(all["rows"] as? Int == 6 && all["groups_of_one"] as? Int == 1, "\(all)")
        #expect(all["partial_groups"] as? Int == 1, "\(all)")
        #expect(all["fields"] as? [String] == ["id", "card_number", "exp_date", "name", "value"], "\(all)")
        let csvPath = "\(directory.path)/rows.csv.gpg"
        _ = FileManager.default.createFile(atPath: csvPath, contents: Data(csvFile))
        try ImportJobTests.gpg(b.home, ["-o", "\(directory.path)/rows.csv", "-d", csvPath])
        let csv = try String(contentsOfFile: "\(directory.path)/rows.csv", encoding: .utf8)
        let lines = csv.split(separator: "\r\n").map(String.init)
        #expect(lines.first == "cloak:group,id,card_number,exp_date,name,value,cloak:metadata")
        #expect(lines.contains { $0.hasSuffix(#",,5105105105105100,09/31,,,"{""customer"":""c7""}""#) }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix(",,,,,4111111111111111,") }, "\(lines)")
        #expect(!csv.contains("one-time"))
    }
}
