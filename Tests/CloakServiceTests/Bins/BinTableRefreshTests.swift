import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Dispatch
import Foundation
import Testing

/// The BIN table end to end (issue 48): `cloak bins import` beside two running nodes on one
/// store, each swapping to the new table within `bins.refresh_s`; a refused import and a header
/// forged by a database writer leave the served table as it was.
@Suite(.serialized, .tags(.racy, .processes, .sockets)) struct BinTableRefreshTests {
    static let auth = [("Authorization", "Bearer \(CloakNode.token)")]

    static func nodes(in directory: TemporaryDirectory, store: String? = nil) throws -> (CloakNode, CloakNode) {
        let store = store ?? "sqlite:\(directory.path)/cloak.db"
        let configure: (String) -> String = {
            $0.replacingOccurrences(of: "bins:\n  refresh_s: 30", with: "bins:\n  refresh_s: 1")
        }
        let scopes = "aliases:create, aliases:reveal, bins:read"
        let a = try CloakNode(store: store, directory: directory.path, scopes: scopes, configure: configure)
        let b = try CloakNode(store: store, directory: directory.path, scopes: scopes, configure: configure)
        return (a, b)
    }

    static func issuer(_ digits: String, on node: CloakNode) -> String? {
        guard let r = try? node.client().request("GET", "/bins/\(digits)", headers: auth), r.status == 200 else {
            return nil
        }
        return r.json?["issuer"] as? String
    }

    static func write(_ text: String, to directory: TemporaryDirectory, name: String) throws -> String {
        let path = "\(directory.path)/\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func everyNodeSwapsToAnImportAndARefusedOneChangesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try Self.nodes(in: directory)
        defer {
            a.stop()
            b.stop()
        }
        #expect(try a.client().request("GET", "/bins/411111", headers: Self.auth).status == 404)
        let first = try Self.write(
            "low,high,issuer,country\n411111,411111,First Bank,US\n", to: directory, name: "one.csv")
        let imported = try a.command(["bins", "import", first, "--source", "test"])
        #expect(imported.status == 0, "\(imported.output)")
        #expect(imported.output.contains(#""version":1"#) && imported.output.contains(#""rows":1"#))
        #expect(
            Poll.until {
                Self.issuer("41111199", on: a) == "First Bank" && Self.issuer("411111", on: b) == "First Bank"
            })

        // A refused import: the table stays as it was, on every node.
        let bad = try Self.write(
            "low,high,issuer\n411111,411112,Second\n411112,411119,Overlap\n", to: directory, name: "bad.csv")
        let refused = try a.command(["bins", "import", bad])
        #expect(refused.status == 2 && refused.output.contains("lines 2 and 3: ranges of 6 digits overlap"))
        let second = try Self.write("low,high,issuer\n411111,411111,Second Bank\n", to: directory, name: "two.csv")
        #expect(try b.command(["bins", "import", second]).status == 0)
        #expect(
            Poll.until {
                Self.issuer("411111", on: a) == "Second Bank" && Self.issuer("411111", on: b) == "Second Bank"
            })
        let status = try a.command(["bins", "status"])
        #expect(status.output.contains(#""version":2"#) && status.output.contains(#""source":"two.csv""#))
        let metrics = try a.client().request("GET", "/metrics")
        #expect(metrics.text.contains("cloak_bins_version 2"))
    }

    /// Issue 57 item 7: an unknown column is refused unless named; a rollback brings the table
    /// before back on every node; status lists what each node serves, from its heartbeat.
    @Test func unknownColumnsAreRefusedARollbackRestoresAndStatusListsEveryNode() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try Self.nodes(in: directory)
        defer {
            a.stop()
            b.stop()
        }
        let good = try Self.write(
            "low,high,issuer,country\n411111,411111,Good Bank,US\n", to: directory, name: "good.csv")
        #expect(try a.command(["bins", "import", good]).status == 0)
        #expect(
            Poll.until { Self.issuer("411111", on: a) == "Good Bank" && Self.issuer("411111", on: b) == "Good Bank" })

        // The vendor's file names the issuer "bank": forgetting --map is refused, not silent.
        let vendor = try Self.write(
            "low,high,bank,country\n411111,411111,Vendor Bank,US\n", to: directory, name: "v.csv")
        let refused = try a.command(["bins", "import", vendor])
        #expect(refused.status == 2 && refused.output.contains(#"unknown column "bank""#), "\(refused.output)")
        #expect(refused.output.contains("--map bank=COLUMN") && refused.output.contains("--ignore-columns bank"))
        let clash = try a.command(["bins", "import", vendor, "--ignore-columns", "country"])
        #expect(clash.status != 0 && clash.output.contains("--ignore-columns names country"), "\(clash.output)")
        let ignoring = try a.command(["bins", "import", vendor, "--ignore-columns", "bank"])
        #expect(ignoring.status == 0, "\(ignoring.output)")
        #expect(Poll.until { Self.issuer("411111", on: a) == nil && Self.issuer("411111", on: b) == nil })

        // Back to the table before, as version 3, on every node.
        let asked = try a.command(["bins", "rollback"])
        #expect(asked.status == 0 && asked.output.contains("would restore") && asked.output.contains("--yes"))
        let rolled = try a.command(["bins", "rollback", "--yes"])
        #expect(rolled.status == 0 && rolled.output.contains(#""version":3"#), "\(rolled.output)")
        #expect(
            Poll.until { Self.issuer("411111", on: a) == "Good Bank" && Self.issuer("411111", on: b) == "Good Bank" })

        // Each node's own heartbeat: both serve version 3.
        #expect(
            Poll.until {
                let status = (try? a.command(["bins", "status"]).output) ?? ""
                return [a.port, b.port].allSatisfy { port in
                    status.contains(#":\#(port)","version":3,"#) && !status.contains(#""current":false"#)
                }
            })
        let status = try a.command(["bins", "status"]).output
        #expect(status.contains(#""stale":false"#) && status.contains(#""adopted_at":"20"#), "\(status)")
    }

    /// A table imported while a node is still building the one before: the node ends on the
    /// latest, whole, and never serves a mix of the two.
    @Test func aTableSwappedDuringLoadEndsOnTheLatest() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try Self.nodes(in: directory)
        defer {
            a.stop()
            b.stop()
        }
        // 40,000 ranges: a second or so to build in a debug binary.
        var big = "low,high,issuer\n"
        for i in 0..<40_000 { big += "\(40_000_000 + i * 100),\(40_000_000 + i * 100 + 99),Old \(i % 7)\n" }
        big += "411111,411111,Old Bank\n"
        let first = try Self.write(big, to: directory, name: "big.csv")
        let second = try Self.write(
            "low,high,issuer\n411111,411111,New Bank\n40000000,40000099,New Range\n", to: directory, name: "new.csv")
        #expect(try a.command(["bins", "import", first]).status == 0)
        #expect(try b.command(["bins", "import", second]).status == 0)
        #expect(Poll.until { Self.issuer("411111", on: a) == "New Bank" && Self.issuer("411111", on: b) == "New Bank" })
        // Whole: a range only the old table had is gone, the new one's is there.
        #expect(Self.issuer("40000150", on: a) == nil && Self.issuer("40000050", on: a) == "New Range")
        #expect(!a.log.contains("is refused") && !b.log.contains("is refused"))
    }

    /// The same on PostgreSQL: two nodes on one database swap to each import.
    @Test(.enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL"), .tags(.postgres))
    func nodesOnPostgreSQLSwapToEachImport() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try PostgresTestCluster.freshDatabase()
        let (a, b) = try Self.nodes(in: directory, store: store)
        defer {
            a.stop()
            b.stop()
        }
        for (name, issuer) in [("one.csv", "First Bank"), ("two.csv", "Second Bank")] {
            let file = try Self.write("low,high,issuer\n411111,411111,\(issuer)\n", to: directory, name: name)
            #expect(try a.command(["bins", "import", file]).status == 0)
            #expect(Poll.until { Self.issuer("411111", on: a) == issuer && Self.issuer("411111", on: b) == issuer })
        }
    }

    @Test func aHeaderForgedWithoutTheRingIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try Self.nodes(in: directory)
        defer {
            a.stop()
            b.stop()
        }
        let table = try Self.write("low,high,issuer\n411111,411111,Real Bank\n", to: directory, name: "real.csv")
        #expect(try a.command(["bins", "import", table]).status == 0)
        #expect(
            Poll.until { Self.issuer("411111", on: a) == "Real Bank" && Self.issuer("411111", on: b) == "Real Bank" })
        // A database writer points the header at a table of its own, with a version above.
        let forged = Array(
            "low,high,brand,funding,segment,issuer,country,currency,product\n411111,411111,,,,Forged,,,\n".utf8)
        let digest = CloakCrypto.Digest.sha256(forged).map { String(format: "%02x", $0) }.joined()
        let header =
            #"{"version":9,"rows":1,"source":"x","imported_at":1,"sha256":"\#(digest)","mac":"\#(String(repeating: "00", count: 32))"}"#
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let sql = """
            INSERT OR REPLACE INTO meta (name, value) VALUES ('bins.table.9', x'\(hex(forged))');
            UPDATE meta SET value = x'\(hex(Array(header.utf8)))' WHERE name = 'bins.current';
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A busy timeout: the nodes' own commits (and audit index rounds) may hold the lock.
        process.arguments = ["sqlite3", "-bail", "-cmd", ".timeout 10000", "\(directory.path)/cloak.db", sql]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(
            Poll.until {
                a.log.contains("the store's BIN table is refused") && b.log.contains("the store's BIN table is refused")
            })
        #expect(Self.issuer("411111", on: a) == "Real Bank")
        #expect(Self.issuer("411111", on: b) == "Real Bank")
    }
}

/// `/validate` on a node serving a BIN table: a card number's state carries the attributes of
/// the digits it shows as `bin`.
@Suite(.tags(.sockets)) struct ValidateCardAttributesTests {
    @Test func aValidCardsStateCarriesItsAttributes() throws {
        try withTestServer(TestServer()) { server throws in
            let table = try BinTableReader(format: .csv).read(
                Array("low,high,issuer,funding,country\n411111,411111,Six Digit Bank,debit,US\n".utf8))
            try BinTableHardeningTests.importTable(table, into: server)
            let r = try server.client().request(
                "POST", "/forms/checkout/validate", json: #"{"fields":{"card_data.card_number":"4111 1111 1111 1111"}}"#
            )
            let fields = try #require(r.json?["fields"] as? [String: [String: Any]])
            let attributes = try #require(fields["card_data.card_number"]?["cardAttributes"] as? [String: String])
            #expect(attributes == ["issuer": "Six Digit Bank", "funding": "debit", "country": "US"])
        }
    }
}

/// A card's attributes kept with its record: shown in reveal answers, and alone to a token with
/// `bins:read` but not `aliases:reveal`; callers' metadata may not use Cloak's namespace.
@Suite(.tags(.sockets)) struct RecordAttributesTests {
    static let binsToken = "bins-read-token"

    @Test func aNewCardRecordKeepsItsAttributes() throws {
        let hex = Digest.sha256(Array(Self.binsToken.utf8)).map { String(format: "%02x", $0) }.joined()
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [", with: "  tokens: [{id: bins, sha256: \"\(hex)\", scopes: [bins:read]}, ")
        try withTestServer(TestServer(yaml: yaml)) { server throws in
            let table = try BinTableReader(format: .csv).read(
                Array("low,high,issuer,funding,country\n411111,411111,Six Digit Bank,debit,US\n".utf8))
            try BinTableHardeningTests.importTable(table, into: server)
            let full = [("Authorization", "Bearer \(TestServer.fullToken)")]
            let created = try server.client().request(
                "POST", "/aliases", json: #"{"data":[{"value":"4111 1111 1111 1111","format":"UUID"}]}"#, headers: full)
            let alias = try #require(
                ((created.json?["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]])?.first?["alias"]
                    as? String)
            let revealed = try server.client().request("GET", "/aliases/\(alias)", headers: full)
            let record = try #require((revealed.json?["data"] as? [[String: Any]])?.first)
            #expect((record["attributes"] as? [String: String])?["issuer"] == "Six Digit Bank")
            #expect((record["metadata"] as? [String: String]) == [:])

            let binsOnly = try server.client().request(
                "GET", "/aliases/\(alias)", headers: [("Authorization", "Bearer \(Self.binsToken)")])
            #expect(binsOnly.status == 200)
            #expect((binsOnly.json?["attributes"] as? [String: String])?["funding"] == "debit")
            #expect(!binsOnly.text.contains("4111"))

            let reserved = try server.client().request(
                "POST", "/aliases",
                json: #"{"data":[{"value":"x","format":"UUID","metadata":{"cloak:attributes":"{}"}}]}"#,
                headers: full)
            #expect(reserved.status == 400)
        }
    }
}

/// What a BIN table may not do: refuse on submission what the accept rule refuses, disclose more
/// of a card than the digits an alias shows, or come back as an older table (issue 48's review).
@Suite(.tags(.racy, .sockets)) struct BinTableHardeningTests {
    static let binsToken = "bins-review-token"
    static let binsRevealToken = "bins-reveal-review-token"

    /// A server with a table: 411111 (6 digits, debit) and a 10-digit range under it that only
    /// a lookup of more digits than a state shows would find.
    static func server(accept: Bool = false) throws -> TestServer {
        let hex = Digest.sha256(Array(Self.binsToken.utf8)).map { String(format: "%02x", $0) }.joined()
        let revealing = Digest.sha256(Array(Self.binsRevealToken.utf8)).map { String(format: "%02x", $0) }.joined()
        var yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [",
            with: "  tokens: [{id: bins, sha256: \"\(hex)\", scopes: [bins:read]}, "
                + "{id: binsreveal, sha256: \"\(revealing)\", scopes: [bins:read, aliases:reveal]}, ")
        if accept {
            yaml = yaml.replacingOccurrences(
                of: "      - name: card_data.card_number\n",
                with: "      - name: card_data.card_number\n        accept: {funding: [credit]}\n")
        }
        let server = try TestServer(yaml: yaml)
        let table = try BinTableReader(format: .csv).read(
            Array("low,high,issuer,funding\n411111,411111,Six,debit\n4111111111,4111111111,Ten,credit\n".utf8))
        try Self.importTable(table, into: server)
        return server
    }

    static func importTable(_ table: BinTableReader.Table, into server: TestServer, now: Int64 = 1) throws {
        let key = server.vault.derivedMAC(purpose: BinTableDocument.purpose)
        let done = DispatchSemaphore(value: 0)
        server.vault.withStore(reads: false) { store in
            try BinTableAdministration(store: store, key: key).importTable(table, source: "test", now: now)
        } completion: { _ in
            done.signal()
        }
        done.wait()
        server.service.binRefresh?.refreshAndWait()
    }

    @Test func theAcceptRuleHoldsOnSubmission() throws {
        try withTestServer(Self.server(accept: true)) { server throws in
            let r = try server.client().request(
                "POST", "/forms/checkout/tokens",
                json: #"{"fields":{"card_data.card_number":"4111 1111 1111 1111","customer.ssn":"123-45-6789"}}"#)
            #expect(r.status == 422, "\(r.status) \(r.text)")
            #expect(r.text.contains("CARD_NOT_ACCEPTED"))
        }
    }

    @Test func anAliasNeverDisclosesMoreThanItsBIN() throws {
        try withTestServer(Self.server()) { server throws in
            let full = [("Authorization", "Bearer \(TestServer.fullToken)")]
            let created = try server.client().request(
                "POST", "/aliases",
                json:
                    #"{"data":[{"value":"4111111111111111","format":"UUID"},{"value":"123-45-6789","format":"UUID"}]}"#,
                headers: full)
            let data = try #require(created.json?["data"] as? [[String: Any]])
            let aliases = data.compactMap { ($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String }
            try #require(aliases.count == 2)
            let bins = [("Authorization", "Bearer \(Self.binsToken)")]
            // The 8-digit BIN a state shows answers (the 6-digit range), never the 10-digit one.
            let card = try server.client().request(
                "POST", "/cards/attributes", json: #"{"alias":"\#(aliases[0])"}"#, headers: bins)
            #expect((card.json?["issuer"] as? String) == "Six", "\(card.text)")
            let stored = try server.client().request("GET", "/aliases/\(aliases[0])", headers: bins)
            #expect(((stored.json?["attributes"] as? [String: String])?["issuer"]) == "Six")
            // An SSN is no card: no prefix of it is looked up.
            let ssn = try server.client().request(
                "POST", "/cards/attributes", json: #"{"alias":"\#(aliases[1])"}"#, headers: bins)
            #expect(ssn.status == 404)
            #expect(server.logs.text.contains(#""action":"card_attributes""#))
        }
    }

    /// Issue 55, item 4: an `FPE_SIX_T_FOUR` alias shows six digits; an 8-digit range's issuer
    /// names the two after them. A caller without `aliases:reveal` gets the six-digit range's
    /// attributes; one who may reveal gets the eight digits a field state shows.
    @Test func aCallerWhoMayNotRevealGetsTheAttributesOfTheDigitsAnAliasShows() throws {
        try withTestServer(Self.server()) { server throws in
            let table = try BinTableReader(format: .csv).read(
                Array("low,high,issuer,funding\n411111,411111,Six,debit\n41111111,41111111,Eight,credit\n".utf8))
            try Self.importTable(table, into: server)
            let full = [("Authorization", "Bearer \(TestServer.fullToken)")]
            let created = try server.client().request(
                "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}"#,
                headers: full)
            let data = try #require(created.json?["data"] as? [[String: Any]])
            let alias = try #require((data.first?["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
            // The alias keeps the six leading digits; its next two are the cipher's (and may be
            // "11" by chance, one run in a hundred), so only the six are asserted.
            #expect(alias.hasPrefix("411111") && alias.hasSuffix("1111") && alias.count == 16, "\(alias)")
            let bins = [("Authorization", "Bearer \(Self.binsToken)")]
            let card = try server.client().request(
                "POST", "/cards/attributes", json: #"{"alias":"\#(alias)"}"#, headers: bins)
            #expect((card.json?["issuer"] as? String) == "Six", "\(card.text)")
            let record = try server.client().request("GET", "/aliases/\(alias)", headers: bins)
            #expect(((record.json?["attributes"] as? [String: String])?["issuer"]) == "Six", "\(record.text)")
            // A caller who may reveal the card learns nothing new from its eighth digit.
            let revealer = try server.client().request(
                "POST", "/cards/attributes", json: #"{"alias":"\#(alias)"}"#,
                headers: [("Authorization", "Bearer \(Self.binsRevealToken)")])
            #expect((revealer.json?["issuer"] as? String) == "Eight", "\(revealer.text)")
        }
    }

    /// Issue 55, item 6: after a restore put an older header back, an import numbered from it
    /// reused a version nodes already served with another table, and `cloak_bins_version`
    /// could not tell them apart. Imports are numbered above every table the store holds, a
    /// table is named by version and digest on every node, and a node follows the store's
    /// table when one comes under the version it serves (a restore that took the newer
    /// tables' names too).
    @Test func aTableIsNamedByVersionAndDigestAndImportsNumberAboveEveryTable() throws {
        try withTestServer(Self.server()) { server throws in
            let bins = [("Authorization", "Bearer \(Self.binsToken)")]
            func lookup() throws -> String? {
                try server.client().request("GET", "/bins/411111", headers: bins).json?["issuer"] as? String
            }
            func table(_ issuer: String) throws -> BinTableReader.Table {
                try BinTableReader(format: .csv).read(Array("low,high,issuer\n411111,411111,\(issuer)\n".utf8))
            }
            func metric() throws -> String {
                try server.client().request("GET", "/metrics").text.split(separator: "\n")
                    .filter { $0.hasPrefix("cloak_bins_table{") }.joined(separator: "\n")
            }
            let first = try FileUploadTests.sqlite(server, "SELECT hex(value) FROM meta WHERE name = 'bins.current'")
            try Self.importTable(table("Two"), into: server)
            #expect(try lookup() == "Two")
            let two = try #require(server.service.binRefresh?.current?.document)
            let twoHeader = try FileUploadTests.sqlite(
                server, "SELECT hex(value) FROM meta WHERE name = 'bins.current'")
            let twoTable = try FileUploadTests.sqlite(
                server, "SELECT hex(value) FROM meta WHERE name = '\(two.tableName)'")
            // A restore of the version-1 state whole (its header, and no newer table's name): the
            // next import is a 2 again, under the version this node serves. The node follows the
            // store's table, and the metric tells the two apart by digest.
            try FileUploadTests.sqlite(
                server,
                "UPDATE meta SET value = x'\(first)' WHERE name = 'bins.current'; DELETE FROM meta WHERE name LIKE 'bins.table.2.%'"
            )
            try Self.importTable(table("Again"), into: server, now: 2)
            let again = try #require(server.service.binRefresh?.current?.document)
            #expect(again.version == 2 && again.digest != two.digest)
            #expect(try lookup() == "Again")
            #expect(try metric() == #"cloak_bins_table{version="2",sha256="\#(again.shortDigest)"} 1"#)
            #expect(String(decoding: JSONWriter.encode(again.json), as: UTF8.self).contains(again.shortDigest))
            // A writer who kept the other version-2 table (imported earlier) cannot switch the node
            // back to it: between two signed tables of one version, the later import holds.
            try FileUploadTests.sqlite(
                server,
                "UPDATE meta SET value = x'\(twoHeader)' WHERE name = 'bins.current'; INSERT OR REPLACE INTO meta (name, value) VALUES ('\(two.tableName)', x'\(twoTable)')"
            )
            server.service.binRefresh?.refreshAndWait()
            #expect(try lookup() == "Again")
            #expect(server.service.binRefresh?.current?.document.digest == again.digest)
            // The version-1 header alone put back (the newer tables' names stay): the next import
            // is 3, not a second 2.
            try FileUploadTests.sqlite(server, "UPDATE meta SET value = x'\(first)' WHERE name = 'bins.current'")
            try Self.importTable(table("Three"), into: server)
            #expect(try lookup() == "Three")
            let three = try #require(server.service.binRefresh?.current?.document)
            #expect(three.version == 3)
            #expect(try metric() == #"cloak_bins_table{version="3",sha256="\#(three.shortDigest)"} 1"#)
        }
    }

    @Test func anOlderTablePutBackIsRefusedAndRacingImportsKeepTheWinnersTable() throws {
        try withTestServer(Self.server()) { server throws in
            let newer = try BinTableReader(format: .csv).read(Array("low,high,issuer\n411111,411111,Newer\n".utf8))
            // The first table's header, kept aside, then a newer import.
            let oldHeader = try FileUploadTests.sqlite(
                server, "SELECT hex(value) FROM meta WHERE name = 'bins.current'")
            try Self.importTable(newer, into: server)
            let lookup = {
                try server.client().request(
                    "GET", "/bins/411111", headers: [("Authorization", "Bearer \(Self.binsToken)")])
            }
            #expect(try lookup().json?["issuer"] as? String == "Newer")
            // A database writer puts the older signed header back: it verifies, but goes backwards.
            try FileUploadTests.sqlite(server, "UPDATE meta SET value = x'\(oldHeader)' WHERE name = 'bins.current'")
            server.service.binRefresh?.refreshAndWait()
            #expect(try lookup().json?["issuer"] as? String == "Newer")
            // The newest table's blob is named by its version and digest, and is never cleared by
            // an import that lost a race to the same version.
            let names = try FileUploadTests.sqlite(
                server, "SELECT name FROM meta WHERE name LIKE 'bins.table.%' AND length(value) > 0")
            #expect(names.split(separator: "\n").allSatisfy { $0.split(separator: ".").count == 4 }, "\(names)")
        }
    }
}
