import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakJobs
@testable import CloakService

/// Issue 60: import jobs as an operator runs them: `cloak import` beside real `cloak serve`
/// nodes on a real store, the outputs read back with `cloak jobs`, every alias revealed.
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct ImportJobTests {
    static let auth = [("Authorization", "Bearer \(CloakNode.token)")]
    static let scopes = "aliases:create, aliases:reveal, jobs:import"

    /// A node whose jobs renew a short lease, at `rowsPerHour`.
    static func node(store: String, _ directory: TemporaryDirectory, rowsPerHour: Int = 36_000_000) throws -> CloakNode
    {
        try CloakNode(
            store: store, directory: directory.path, scopes: scopes,
            configure: {
                $0.replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 5")
                    .replacingOccurrences(
                        of: "  import_rows_per_hour: 36000000", with: "  import_rows_per_hour: \(rowsPerHour)")
            })
    }

    /// `count` valid card numbers, distinct for each seed.
    static func cards(_ count: Int, seed: Int) -> [String] { MultiNodeTests.cards(count, seed: seed) }

    /// A card file: a header, then `r<n>,<card>,12/29` a row.
    static func csv(_ cards: [String]) -> String {
        "id,card_number,exp_date\n"
            + cards.enumerated().map { "r\($0.offset),\($0.element),12/29" }
            .joined(separator: "\n") + "\n"
    }

    static func write(_ text: String, _ directory: TemporaryDirectory, _ name: String) -> String {
        let path = "\(directory.path)/\(name)"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    static func lines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// The job's id from `cloak import`'s first line.
    static func jobID(_ output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix("job_") }.map(String.init)
    }

    static func status(_ node: CloakNode, _ id: String) throws -> [String: Any] {
        let run = try node.command(["jobs", "status", id])
        return lines(run.output).first ?? [:]
    }

    @Test func aCardFileIsImportedWithItsMappingAndAdvice() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory)
        defer { node.stop() }
        let cards = Self.cards(6, seed: 61)
        // A byte order mark, CRLF, quotes, a blank line, a duplicate value under another id, a
        // row short of a field, an invalid card, an expiry that is no date, and a quoted comma.
        let csv =
            "\u{FEFF}id,card_number,exp_date\r\n"
            + "a1,\(cards[0]),12/29\r\n"
            + "\"a2\",\"\(cards[1])\",\"12/29\"\r\n"
            + "\r\n"
            + "a3,\(cards[0]),12/29\r\n"
            + "a4,\(cards[2])\r\n"
            + "a5,4111111111111112,12/29\r\n"
            + "a6,\(cards[3]),13/29\r\n"
            + "\"a,7\",\(cards[4]),01/30\r\n"
        let file = Self.write(csv, directory, "cards.csv")
        let run = try node.command(["import", "--form", "card_import", "--token", "nodes", file])
        #expect(run.status == 0, "\(run.output)")
        let id = try #require(Self.jobID(run.output))
        let status = try Self.status(node, id)
        #expect(status["state"] as? String == "done")
        #expect(status["rows_read"] as? Int == 7 && status["imported"] as? Int == 4 && status["refused"] as? Int == 3)

        let advice = Self.lines(try node.command(["jobs", "advice", id]).output)
        #expect(advice.map { $0["row"] as? Int } == [2, 3, 5, 6, 7, 8, 9])
        #expect(advice.map { $0["id"] as? String } == ["a1", "a2", "a3", "a4", "a5", "a6", "a,7"])
        #expect(advice.map { $0["result"] as? String } == ["ok", "ok", "ok", "refused", "refused", "refused", "ok"])
        #expect(advice.map { $0["code"] as? Int } == [nil, nil, nil, 1002, 1001, 1001, nil])
        // The advice file names the rule, never the value (nor whether it was stored before).
        let adviceText = try node.command(["jobs", "advice", id]).output
        for card in cards + ["4111111111111112"] { #expect(!adviceText.contains(card)) }
        #expect(adviceText.contains("card_number"))

        let mapping = Self.lines(try node.command(["jobs", "mapping", id]).output)
        #expect(mapping.map { $0["id"] as? String } == ["a1", "a2", "a3", "a,7"])
        let aliases = mapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] }
        #expect(aliases.count == 4)
        // The same value under two ids: one record, one alias, as POST /aliases dedupes.
        #expect(aliases[0] == aliases[2])
        for (alias, card) in zip(aliases, [cards[0], cards[1], cards[0], cards[4]]) {
            let revealed = try node.client().request("GET", "/aliases/\(alias)", headers: Self.auth)
            #expect(revealed.status == 200 && revealed.text.contains(card), "\(revealed.status)")
        }
        // The same file again: the same aliases (deduplicated, not stored twice).
        let again = try node.command(["import", "--form", "card_import", "--token", "nodes", file])
        let second = Self.lines(try node.command(["jobs", "mapping", try #require(Self.jobID(again.output))]).output)
        #expect(second.compactMap { ($0["aliases"] as? [String: String])?["card_number"] } == aliases)
        let listed = Self.lines(try node.command(["jobs", "list"]).output)
        #expect(listed.count == 2 && listed.allSatisfy { $0["state"] as? String == "done" })
    }

    @Test(arguments: [
        ("id,card_number,exp_date,cvc\nx,4111111111111111,12/29,123\n", "card_import", "security code"),
        ("id,card_number,exp_date,extra\nx,4111111111111111,12/29,1\n", "card_import", "unknown column \"extra\""),
        ("id,card_number\nx,4111111111111111\n", "card_import", "no column exp_date"),
        ("", "card_import", "empty"),
        ("id,\"card_number\nx,4111111111111111,12/29\n", "card_import", "never closed"),
        ("id,card_number,exp_date\n", "checkout", "VOLATILE"),
        ("id,card_number,exp_date\n", "nosuchform", "no form"),
    ])
    func aFileThatCannotBeImportedIsRefusedWhole(csv: String, form: String, reason: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory)
        defer { node.stop() }
        let file = Self.write(csv, directory, "refused.csv")
        let run = try node.command(["import", "--form", form, "--token", "nodes", file])
        #expect(run.status == 2 && run.output.contains(reason), "\(run.status) \(run.output)")
        #expect(!run.output.contains("4111111111111111"))
        #expect(try node.command(["jobs", "list"]).output.isEmpty)
    }

    /// Review V, item 10: the shipped `card_import` form takes an expiry as providers write it
    /// (`MM/YYYY`, `M/YY`, `MMYY`) and as a month and a year in columns of their own; an import
    /// that refused every row exits 1 naming its commonest reason.
    @Test func expiriesInTheLayoutsProvidersWriteAreTaken() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory)
        defer { node.stop() }
        let cards = Self.cards(6, seed: 62)
        let csv =
            "id,card_number,exp_date\n" + "a1,\(cards[0]),12/2030\n" + "a2,\(cards[1]),1/30\n" + "a3,\(cards[2]),0130\n"
            + "a4,\(cards[3]),2031-07\n"
        let run = try node.command(
            ["import", "--form", "card_import", "--token", "nodes", Self.write(csv, directory, "layouts.csv")])
        #expect(run.status == 0, "\(run.output)")
        #expect(Self.lines(run.output).last?["imported"] as? Int == 4, "\(run.output)")
        let split = "id,card_number,exp_month,exp_year\n" + "b1,\(cards[4]),7,2031\n" + "b2,\(cards[5]),07,31\n"
        let apart = try node.command(
            ["import", "--form", "card_import", "--token", "nodes", Self.write(split, directory, "apart.csv")])
        #expect(apart.status == 0 && Self.lines(apart.output).last?["imported"] as? Int == 2, "\(apart.output)")

        // Every row refused: the job is done, but the command says it imported nothing.
        let past = "id,card_number,exp_date\n" + "c1,\(cards[0]),12/19\n" + "c2,\(cards[1]),01/2001\n"
        let refused = try node.command(
            ["import", "--form", "card_import", "--token", "nodes", Self.write(past, directory, "past.csv")])
        #expect(refused.status == 1, "\(refused.output)")
        #expect(
            refused.output.contains("every row (2) was refused; the commonest reason (2 rows): 1001"),
            "\(refused.output)")
        #expect(refused.output.contains("exp_date"), "\(refused.output)")
        for card in cards { #expect(!refused.output.contains(card)) }
    }

    /// Review V, item 10: a job reads the forms the node serves now. A form added to the file
    /// but not yet reloaded leaves the job cancelled with its input kept and how to go on; once
    /// the node reloads (SIGHUP, `cloak reload`), `cloak jobs resume` finishes it.
    @Test func aJobReadsTheFormsTheNodeServesNow() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory)
        defer { node.stop() }
        let yaml = try String(contentsOfFile: node.configPath, encoding: .utf8)
        let added = yaml.replacingOccurrences(
            of: "\n  card_import:\n",
            with: "\n  provider_import:\n    fields:\n      - {name: card_number, type: cardNumber, required: true, "
                + "tokenization: {format: UUID, storage: PERSISTENT}}\n\n  card_import:\n")
        #expect(added != yaml)
        try added.write(toFile: node.configPath, atomically: true, encoding: .utf8)
        let cards = Self.cards(2, seed: 63)
        let file = Self.write("id,card_number\nr1,\(cards[0])\nr2,\(cards[1])\n", directory, "provider.csv")
        let run = try node.command(["import", "--form", "provider_import", "--token", "nodes", file])
        #expect(run.status == 1, "\(run.output)")
        let waiting = Self.lines(run.output).last ?? [:]
        #expect(waiting["state"] as? String == "cancelled", "\(run.output)")
        #expect((waiting["failure"] as? String)?.contains("cloak jobs resume") == true, "\(run.output)")
        let id = try #require(Self.jobID(run.output))

        #expect(try node.command(["reload"]).status == 0)
        try poll { ReloadTests.reloads(node, "applied") == 1 }
        #expect(try node.command(["jobs", "resume", id]).status == 0)
        let done = try node.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0 && Self.lines(done.output).last?["imported"] as? Int == 2, "\(done.output)")
    }

    /// Review V, item 9: an OpenPGP-compressed file that inflates past 100 times its size (a
    /// compression bomb: 20 MiB of one row in a few KiB) is refused as it is decrypted, over
    /// the API and on the command line, well within `jobs.max_input_mib`; nothing is stored.
    @Test func aCompressionBombIsRefusedAsItInflates() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let home = "\(directory.path)/gnupg"
        try FileManager.default.createDirectory(
            atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Self.gpg(home, ["--quick-gen-key", "Cloak Import <import@example.com>", "rsa2048", "encrypt", "never"])
        let card = Self.cards(1, seed: 64)[0]
        let bomb = "id,card_number,exp_date\n" + String(repeating: "r1,\(card),12/29\n", count: 800_000)
        let plain = Self.write(bomb, directory, "bomb.csv")
        try Self.gpg(
            home,
            [
                "--trust-model", "always", "-r", "import@example.com", "-z", "9", "-o", "\(directory.path)/bomb.gpg",
                "-e", plain,
            ])
        let sealed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/bomb.gpg")))
        #expect(sealed.count * InflationBound.ratio < bomb.utf8.count, "\(sealed.count) bytes do not make a bomb")
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: Self.scopes,
            configure: { $0.replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 30\n  gnupg_home: \(home)") })
        defer { node.stop() }
        // The node decrypts and reads megabytes before the bound: beside the stress pass, a debug
        // build took over 20 s to answer.
        let answer = try node.client(timeout: 120).request(
            "POST", "/admin/jobs/imports?form=card_import", body: sealed, headers: Self.auth)
        #expect(
            answer.status == 413 && answer.text.contains("inflates past 100 times"), "\(answer.status) \(answer.text)")
        let command = try node.command(
            ["import", "--form", "card_import", "--token", "nodes", "\(directory.path)/bomb.gpg"])
        #expect(command.status == 2 && command.output.contains("inflates past 100 times"), "\(command.output)")
        // No job of it goes on: each refused one failed, its input dropped.
        #expect(
            try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM jobs WHERE state <> 'failed'"]).hasPrefix(
                "0"))
    }

    @Test func aJSONLinesFileWithAFormatImportsEachValue() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory)
        defer { node.stop() }
        let lines = [
            #"{"customer":"c1","ssn":"123-45-6789"}"#, #"{"customer":"c2","ssn":123456789}"#, "not json",
            #"{"customer":"c3","ssn":"987-65-4321","other":"x"}"#, #"{"customer":"c4","ssn":"987-65-4329"}"#,
        ]
        let file = Self.write(lines.joined(separator: "\n") + "\n", directory, "people.jsonl")
        let run = try node.command([
            "import", "--format", "UUID", "--token", "nodes", "--map", "customer=id,ssn=value", file,
        ])
        #expect(run.status == 0, "\(run.output)")
        let id = try #require(Self.jobID(run.output))
        let advice = Self.lines(try node.command(["jobs", "advice", id]).output)
        #expect(advice.map { $0["result"] as? String } == ["ok", "refused", "refused", "refused", "ok"])
        let mapping = Self.lines(try node.command(["jobs", "mapping", id]).output)
        let alias = try #require((mapping.first?["aliases"] as? [String: String])?["value"])
        let revealed = try node.client().request("GET", "/aliases/\(alias)", headers: Self.auth)
        #expect(revealed.text.contains("123-45-6789"))
    }

    @Test func aCancelledJobStopsAndResumesWhereItWas() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // 36,000 rows an hour: ten a second in batches of 25 (a lease of 5 s), the first at once,
        // so the last of 100 rows goes 7.5 s after the first: room for `jobs cancel` to start and
        // land on a loaded machine. (At 100 a second the job ended in 2.5 s and, beside
        // stress-ng, before the cancel command ran.)
        let node = try Self.node(store: "sqlite:\(directory.path)/cloak.db", directory, rowsPerHour: 36_000)
        defer { node.stop() }
        let cards = Self.cards(100, seed: 62)
        let csv = Self.csv(cards)
        let file = Self.write(csv, directory, "slow.csv")
        let run = try node.command(["import", "--form", "card_import", "--token", "nodes", "--detach", file])
        let id = try #require(Self.jobID(run.output), "\(run.output)")
        try poll { (try Self.status(node, id)["rows_read"] as? Int ?? 0) > 0 }
        #expect(try node.command(["jobs", "cancel", id]).status == 0)
        let cancelled = try Self.status(node, id)
        #expect(cancelled["state"] as? String == "cancelled")
        // The batch under way may still commit: after it, nothing moves.
        let stopped = cancelled["rows_read"] as? Int ?? 0
        #expect(stopped < 100)
        #expect(try node.command(["jobs", "resume", id]).status == 0)
        let done = try node.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0, "\(done.output)")
        let advice = Self.lines(try node.command(["jobs", "advice", id]).output)
        #expect(advice.map { $0["id"] as? String } == (0..<100).map { "r\($0)" })
    }

    /// Kill -9 at several points of one import: every row exactly once in the advice file, and
    /// each value stored once.
    @Test func killingTheNodeMidJobLosesAndRepeatsNoRow() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = "sqlite:\(directory.path)/cloak.db"
        let count = 20_000
        let cards = Self.cards(count, seed: 63)
        let csv = Self.csv(cards)
        let file = Self.write(csv, directory, "big.csv")
        var node = try Self.node(store: store, directory, rowsPerHour: 18_000_000)
        // Whichever node runs last is stopped, however the test ends.
        defer { node.stop() }
        let run = try node.command(["import", "--form", "card_import", "--token", "nodes", "--detach", file])
        let id = try #require(Self.jobID(run.output), "\(run.output)")
        var kills = 0
        for target in [2_000, 9_000, 15_000] {
            try poll(timeout: 120) { (try Self.status(node, id)["rows_read"] as? Int ?? 0) >= target }
            usleep(UInt32.random(in: 0...200_000))
            node.kill9()
            kills += 1
            node = try Self.node(store: store, directory, rowsPerHour: 18_000_000)
        }
        let done = try node.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0, "\(done.output)")
        #expect(kills == 3)
        let advice = Self.lines(try node.command(["jobs", "advice", id]).output)
        #expect(advice.count == count)
        #expect(advice.map { $0["id"] as? String } == (0..<count).map { "r\($0)" })
        #expect(advice.allSatisfy { $0["result"] as? String == "ok" })
        let mapping = Self.lines(try node.command(["jobs", "mapping", id]).output)
        #expect(mapping.count == count)
        #expect(Set(mapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] }).count == count)
        // One record a value (each row's card and id, the one expiry all share) and one group a
        // row: nothing stored twice by a batch that ran again.
        let records = try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM records"])
        #expect(records.trimmingCharacters(in: .whitespacesAndNewlines) == "\(2 * count + 1)")
        let groups = try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM record_groups"])
        #expect(groups.trimmingCharacters(in: .whitespacesAndNewlines) == "\(count)")
        #expect(Set(mapping.compactMap { $0["group"] as? String }).count == count)
    }

    @Test func theAPITakesAFileAndGivesItsOutputsOnlyToItsToken() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let other = "other-import-token"
        let hex = Digest.sha256(Array(other.utf8)).map { String(format: "%02x", $0) }.joined()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: Self.scopes,
            configure: {
                $0.replacingOccurrences(of: "  max_input_mib: 4096", with: "  max_input_mib: 1")
                    .replacingOccurrences(
                        of: "scopes: [\(Self.scopes)]}]",
                        with: "scopes: [\(Self.scopes)]}, {id: other, sha256: \"\(hex)\", scopes: [jobs:import]}]")
            })
        defer { node.stop() }
        let cards = Self.cards(300, seed: 64)
        let csv = Self.csv(cards)
        let started = try node.client().request(
            "POST", "/admin/jobs/imports?form=card_import&file=cards.csv", body: Array(csv.utf8),
            headers: Self.auth + [("Content-Type", "text/csv")])
        #expect(started.status == 202, "\(started.text)")
        #expect(started.json?["rows"] as? Int == 300 && started.json?["state"] as? String == "queued")
        let id = try #require(started.json?["id"] as? String)
        try poll {
            try node.client().request("GET", "/admin/jobs/\(id)", headers: Self.auth).json?["state"] as? String
                == "done"
        }
        let mapping = try node.client().request("GET", "/admin/jobs/\(id)/mapping", headers: Self.auth)
        #expect(mapping.status == 200 && mapping.header("Cache-Control") == "no-store")
        #expect(Self.lines(mapping.text).count == 300)
        let advice = try node.client().request("GET", "/admin/jobs/\(id)/advice", headers: Self.auth)
        #expect(Self.lines(advice.text).map { $0["id"] as? String } == (0..<300).map { "r\($0)" })
        // Another token with jobs:import: neither the job nor its files, as if there were none.
        let otherAuth = [("Authorization", "Bearer \(other)")]
        for path in ["/admin/jobs/\(id)", "/admin/jobs/\(id)/mapping", "/admin/jobs/\(id)/advice"] {
            #expect(try node.client().request("GET", path, headers: otherAuth).status == 404, "\(path)")
        }
        #expect(try node.client().request("POST", "/admin/jobs/\(id)/cancel", headers: otherAuth).status == 404)
        let listed = try node.client().request("GET", "/admin/jobs", headers: otherAuth)
        #expect((listed.json?["data"] as? [Any])?.isEmpty == true, "\(listed.text)")
        #expect(try node.client().request("GET", "/admin/jobs", headers: []).status == 401)

        // Refused on the way: too large, a header that cannot be imported, a bad query. Each
        // leaves no input behind.
        let huge = "id,card_number,exp_date\n" + String(repeating: "r1,\(cards[0]),12/29\n", count: 60_000)
        let tooLarge = try node.client().request(
            "POST", "/admin/jobs/imports?form=card_import", body: Array(huge.utf8), headers: Self.auth)
        #expect(tooLarge.status == 413, "\(tooLarge.text)")
        let badHeader = try node.client().request(
            "POST", "/admin/jobs/imports?form=card_import", body: Array("id,card_number,cvc\nx,1,2\n".utf8),
            headers: Self.auth)
        #expect(badHeader.status == 400 && badHeader.text.contains("security code"), "\(badHeader.text)")
        for query in ["", "?form=card_import&format=UUID", "?form=nosuch", "?format=NOPE", "?form=card_import&x=1"] {
            let answer = try node.client().request(
                "POST", "/admin/jobs/imports\(query)", body: Array(csv.utf8), headers: Self.auth)
            #expect(answer.status == 400, "\(query): \(answer.status) \(answer.text)")
        }
        try poll {
            try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM job_chunks WHERE part = 0"])
                .trimmingCharacters(in: .whitespacesAndNewlines) == "0"
        }
        let states = Self.lines(try node.command(["jobs", "list"]).output).compactMap { $0["state"] as? String }
        // A body declared too large is refused before a job exists; the bad header's job failed.
        #expect(states.sorted() == ["done", "failed"], "\(states)")
    }

    /// A migration past what the guess windows may hold (the token's million values an hour, or
    /// here the node's `limits.guess_memory_mib` of 1 MiB: 8,192 values) waits for room with its
    /// lease kept, rather than refusing every row past it for the rest of the hour; it can be
    /// cancelled meanwhile, and what it imported stays with its advice.
    @Test func aJobAtTheGuessBudgetWaitsAndRefusesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, tokenID: "importer",
            scopes: "jobs:import, aliases:create",
            configure: {
                $0.replacingOccurrences(of: "  guess_memory_mib: 512", with: "  guess_memory_mib: 1")
                    .replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 5")
                    .replacingOccurrences(
                        of: "scopes: [jobs:import, aliases:create]}]",
                        with: "scopes: [jobs:import, aliases:create], bucket_values_per_hour: 1000000}]")
            })
        defer { node.stop() }
        let budget = (1 << 20) / 128
        let count = budget + 1_000
        let file = Self.write(Self.csv(Self.cards(count, seed: 67)), directory, "cards.csv")
        let run = try node.command(["import", "--form", "card_import", "--token", "importer", "--detach", file])
        let id = try #require(Self.jobID(run.output), "\(run.output)")
        try poll(timeout: 120) { node.log.contains("jobs: waiting for room in the token's guess windows") }
        // Still running, its lease renewed past several lease times, nothing refused.
        let first = try Self.status(node, id)
        let imported = try #require(first["imported"] as? Int)
        #expect(first["state"] as? String == "running" && first["refused"] as? Int == 0, "\(first)")
        #expect(imported > 0 && imported <= budget, "\(first)")
        // Only the card of each row counts: its id and expiry, kept in the row's group, are never
        // answered with an alias (counted, they filled the window at a third of the rows).
        #expect(imported > budget * 3 / 4, "\(first)")
        let leaseEnds = Date().addingTimeInterval(12)
        try poll { Date() > leaseEnds }
        let later = try Self.status(node, id)
        #expect(later["state"] as? String == "running" && later["refused"] as? Int == 0, "\(later)")
        #expect(later["imported"] as? Int == imported, "\(later)")
        #expect(try node.command(["jobs", "cancel", id]).status == 0)
        try poll { try Self.status(node, id)["state"] as? String == "cancelled" }
        // Its files are whole once it is done (resumed): a cancelled job's are refused before
        // anything is written (review V, item 3), as the API refuses them.
        let advice = try node.command(["jobs", "advice", id])
        #expect(advice.status != 0 && advice.output.contains("the job is cancelled"), "\(advice.output)")
        #expect(Self.lines(advice.output).isEmpty)
    }

    /// Two nodes on one PostgreSQL database: the node holding the job is killed, the other takes
    /// the job over once the lease lapses and finishes it; every row once, one record a value.
    @Test(.enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL"), .tags(.postgres))
    func anotherNodeTakesOverAJobOnPostgreSQL() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try PostgresTestCluster.freshDatabase()
        let count = 6_000
        let cards = Self.cards(count, seed: 65)
        let csv = Self.csv(cards)
        let file = Self.write(csv, directory, "big.csv")
        var nodes = [
            try Self.node(store: store, directory, rowsPerHour: 3_600_000),
            try Self.node(store: store, directory, rowsPerHour: 3_600_000),
        ]
        defer { for node in nodes { node.stop() } }
        let run = try nodes[0].command(["import", "--form", "card_import", "--token", "nodes", "--detach", file])
        let id = try #require(Self.jobID(run.output), "\(run.output)")
        try poll(timeout: 120) { (try Self.status(nodes[0], id)["rows_read"] as? Int ?? 0) >= 1_000 }
        // The holder's process id is in its lease: that node goes.
        let holder = try #require(try Self.status(nodes[0], id)["lease_holder"] as? String)
        let victim = try #require(nodes.firstIndex { holder.contains(":\($0.pid):") }, "\(holder)")
        nodes[victim].kill9()
        let survivor = nodes[1 - victim]
        nodes.remove(at: victim)
        let done = try survivor.command(["jobs", "status", "--follow", id])
        #expect(done.status == 0, "\(done.output)")
        let finished = try Self.status(survivor, id)
        #expect(finished["imported"] as? Int == count)
        let advice = Self.lines(try survivor.command(["jobs", "advice", id]).output)
        #expect(advice.map { $0["id"] as? String } == (0..<count).map { "r\($0)" })
        let mapping = Self.lines(try survivor.command(["jobs", "mapping", id]).output)
        #expect(Set(mapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] }).count == count)
        #expect(survivor.log.contains("jobs: running"))
    }

    /// An OpenPGP file (issue 60, item 4): encrypted by gpg and by PGPy (a second
    /// implementation) to a key in the node's GnuPG home, it imports; without integrity
    /// protection, altered, cut short, for another key, or with no home configured, it is refused
    /// with nothing stored.
    @Test(.enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (PGPy)"), .tags(.python))
    func anOpenPGPFileImportsOnlyWholeAndProtected() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let home = "\(directory.path)/gnupg"
        let other = "\(directory.path)/other-gnupg"
        for dir in [home, other] {
            try FileManager.default.createDirectory(
                atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Self.gpg(dir, ["--quick-gen-key", "Cloak Import <import@example.com>", "rsa2048", "encrypt", "never"])
        }
        let cards = Self.cards(50, seed: 66)
        let csv = Self.csv(cards)
        let plain = Self.write(csv, directory, "cards.csv")
        let encrypt = ["--trust-model", "always", "-r", "import@example.com"]
        try Self.gpg(home, encrypt + ["-o", "\(directory.path)/cards.gpg", "-e", plain])
        try Self.gpg(home, encrypt + ["--rfc2440", "-o", "\(directory.path)/nomdc.gpg", "-e", plain])
        try Self.gpg(other, encrypt + ["-o", "\(directory.path)/other.gpg", "-e", plain])
        try Self.gpg(home, ["--armor", "-o", "\(directory.path)/public.asc", "--export", "import@example.com"])
        var sealed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/cards.gpg")))
        _ = FileManager.default.createFile(
            atPath: "\(directory.path)/cut.gpg", contents: Data(sealed.prefix(sealed.count - 40)))
        sealed[sealed.count / 2] ^= 0x01
        _ = FileManager.default.createFile(atPath: "\(directory.path)/altered.gpg", contents: Data(sealed))
        // PGPy, an independent implementation, armored.
        let pgpy = try TestPython.run(
            """
            import json, sys, warnings
            warnings.filterwarnings("ignore")
            import pgpy
            key, _ = pgpy.PGPKey.from_file(sys.argv[1])
            message = pgpy.PGPMessage.new(open(sys.argv[2], "rb").read(), file=True)
            # The encryption key: a subkey, or the primary key itself (gpg's quick key here).
            target = next(iter(key.subkeys.values()), key)
            print(json.dumps({"message": str(target.encrypt(message))}))
            """,
            inputs: [
                Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/public.asc"))), Array(csv.utf8),
            ])
        let armored = try #require((pgpy as? [String: Any])?["message"] as? String)
        #expect(armored.hasPrefix("-----BEGIN PGP MESSAGE-----"))
        _ = Self.write(armored, directory, "pgpy.asc")

        // A message far smaller than its plaintext (gpg compresses): 2 MiB of rows, over the
        // node's 1 MiB jobs.max_input_mib.
        let inflating = "id,card_number,exp_date\n" + String(repeating: "r1,\(cards[0]),12/29\n", count: 80_000)
        let inflatingPlain = Self.write(inflating, directory, "inflating.csv")
        try Self.gpg(home, encrypt + ["-o", "\(directory.path)/inflating.gpg", "-e", inflatingPlain])

        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: Self.scopes,
            configure: {
                $0.replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 30\n  gnupg_home: \(home)")
                    .replacingOccurrences(of: "  max_input_mib: 4096", with: "  max_input_mib: 1")
            })
        defer { node.stop() }
        func file(_ name: String) throws -> [UInt8] {
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/\(name)")))
        }
        // Over the API first: the node decrypts the body as it arrives, and refuses it whole.
        for refused in ["nomdc.gpg", "altered.gpg", "cut.gpg", "other.gpg", "inflating.gpg"] {
            let answer = try node.client().request(
                "POST", "/admin/jobs/imports?form=card_import", body: try file(refused), headers: Self.auth)
            let (status, words) =
                refused == "inflating.gpg" ? (413, "plaintext is larger") : (400, "nothing was imported")
            #expect(
                answer.status == status && answer.text.contains(words), "\(refused): \(answer.status) \(answer.text)")
            #expect(!answer.text.contains(cards[0]))
        }
        // A body that stops mid-message holds its token's one decryption: another file of the
        // same token waits (429). Broken off, its decryption ends with the connection and the
        // token's next file is taken.
        let message = try file("cards.gpg")
        do {
            let stalled = try node.client()
            try stalled.send(
                "POST /admin/jobs/imports?form=card_import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(CloakNode.token)\r\n"
                    + "Content-Length: \(message.count)\r\n\r\n")
            try stalled.send(Array(message.prefix(message.count / 2)))
            try poll { try node.command(["jobs", "list"]).output.contains(#""state":"receiving""#) }
            let second = try node.client().request(
                "POST", "/admin/jobs/imports?form=card_import", body: message, headers: Self.auth)
            #expect(
                second.status == 429 && second.text.contains("another file of this token"),
                "\(second.status) \(second.text)")
        }
        try poll { !(try node.command(["jobs", "list"]).output.contains(#""state":"receiving""#)) }
        #expect(try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM records"]).hasPrefix("0"))
        #expect(
            try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM job_chunks WHERE part = 0"]).hasPrefix("0"))
        for accepted in ["cards.gpg", "pgpy.asc"] {
            // Until the broken body's decryption has let its slot go: "send it again shortly".
            var started = try node.client().request(
                "POST", "/admin/jobs/imports?form=card_import&file=\(accepted)", body: try file(accepted),
                headers: Self.auth)
            try poll {
                guard started.status == 429 else { return true }
                started = try node.client().request(
                    "POST", "/admin/jobs/imports?form=card_import&file=\(accepted)", body: try file(accepted),
                    headers: Self.auth)
                return false
            }
            #expect(started.status == 202 && started.json?["rows"] as? Int == 50, "\(accepted): \(started.text)")
            let id = try #require(started.json?["id"] as? String)
            try poll {
                try node.client().request("GET", "/admin/jobs/\(id)", headers: Self.auth).json?["state"] as? String
                    == "done"
            }
            let mapping = try node.client().request("GET", "/admin/jobs/\(id)/mapping", headers: Self.auth)
            #expect(Self.lines(mapping.text).map { $0["id"] as? String } == (0..<50).map { "r\($0)" })
        }
        try node.command(["jobs", "list"]).output.split(separator: "\n").forEach { line in
            #expect(!line.contains(cards[0]))
        }
        // Then the same files through `cloak import`, which decrypts them itself.
        for refused in ["nomdc.gpg", "altered.gpg", "cut.gpg", "other.gpg"] {
            let run = try node.command([
                "import", "--form", "card_import", "--token", "nodes", "\(directory.path)/\(refused)",
            ])
            #expect(run.status == 2 && run.output.contains("nothing of it was imported"), "\(refused): \(run.output)")
        }
        // 50 cards, 50 row ids, one expiry.
        #expect(try sqlite(["\(directory.path)/cloak.db", "SELECT count(*) FROM records"]).hasPrefix("101"))
        for file in ["cards.gpg", "pgpy.asc"] {
            let run = try node.command([
                "import", "--form", "card_import", "--token", "nodes", "\(directory.path)/\(file)",
            ])
            #expect(run.status == 0, "\(file): \(run.output)")
            let mapping = Self.lines(
                try node.command(["jobs", "mapping", try #require(Self.jobID(run.output))]).output)
            #expect(mapping.map { $0["id"] as? String } == (0..<50).map { "r\($0)" })
        }
        // Without a GnuPG home, an encrypted file is refused by name.
        let bare = try CloakNode(
            store: "sqlite:\(directory.path)/bare.db", directory: directory.path, scopes: Self.scopes)
        defer { bare.stop() }
        let run = try bare.command([
            "import", "--form", "card_import", "--token", "nodes", "\(directory.path)/cards.gpg",
        ])
        #expect(run.status == 2 && run.output.contains("jobs.gnupg_home"), "\(run.output)")
        let answer = try bare.client().request(
            "POST", "/admin/jobs/imports?form=card_import", body: try file("cards.gpg"), headers: Self.auth)
        #expect(answer.status == 400 && answer.text.contains("jobs.gnupg_home"), "\(answer.text)")
    }

    /// Runs gpg on `home`, without a prompt; fails the test when it fails.
    @discardableResult
    static func gpg(_ home: String, _ arguments: [String]) throws -> String {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/gpg")
        run.arguments =
            ["--homedir", home, "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""] + arguments
        let pipe = Pipe()
        run.standardOutput = pipe
        run.standardError = pipe
        try run.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(run.terminationStatus == 0, "gpg \(arguments): \(output)")
        return output
    }

    /// docs/jobs.md's worked example, every `sh` block in order, as an operator would type them
    /// beside a node (its address rewritten to the node's), and the files it shows compared.
    ///
    /// Then the export example: Alice asks, Bob approves, and a second Cloak (another key ring,
    /// its GnuPG home the one the example makes) imports the file; each moved alias reveals there
    /// the value its old alias reveals here.
    @Test func theDocsWorkedExampleRunsAsWritten() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob) = ("docs-alice-secret", "docs-bob-secret")
        func hex(_ secret: String) -> String {
            Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, tokenID: "importer",
            scopes: "jobs:import, aliases:create",
            configure: {
                // The GnuPG home the encrypted-file example makes in the work directory.
                $0.replacingOccurrences(
                    of: "  lease_s: 30", with: "  lease_s: 30\n  gnupg_home: \(directory.path)/work/ops-gnupg"
                ).replacingOccurrences(
                    of: "scopes: [jobs:import, aliases:create]}]",
                    with: """
                        scopes: [jobs:import, aliases:create]}, \
                        {id: alice, sha256: "\(hex(alice))", scopes: [aliases:reveal, jobs:export], person: alice@example.com}, \
                        {id: bob, sha256: "\(hex(bob))", scopes: [jobs:approve], person: bob@example.com}]
                        """)
            })
        defer { node.stop() }
        let other = try CloakNode(
            store: "sqlite:\(directory.path)/other.db", directory: directory.path,
            environment: ["CLOAK_MASTER_KEY": String(repeating: "0c", count: 32)], tokenID: "importer",
            scopes: "jobs:import, aliases:create, aliases:reveal",
            configure: {
                $0.replacingOccurrences(of: "  lease_s: 30", with: "  lease_s: 30\n  gnupg_home: other-vault")
            })
        defer { other.stop() }
        let doc = try String(
            contentsOf: TestServer.repositoryRoot.appendingPathComponent("docs/jobs.md"), encoding: .utf8)
        let blocks = Self.fenced(doc, language: "sh")
        #expect(blocks.count >= 6)
        let work = "\(directory.path)/work"
        try FileManager.default.createDirectory(atPath: "\(work)/config", withIntermediateDirectories: true)
        // Each vault's configuration names its own store and key ring (the commands run without
        // the nodes' CLOAK_VAULT_* variables, which would name one store for both).
        try FileManager.default.createDirectory(atPath: "\(work)/other", withIntermediateDirectories: true)
        for (source, database, key, target) in [
            (node.configPath, "cloak.db", "CLOAK_MASTER_KEY", "config"),
            (other.configPath, "other.db", "OTHER_MASTER_KEY", "other"),
        ] {
            try String(contentsOfFile: source, encoding: .utf8)
                .replacingOccurrences(
                    of: #"store: "sqlite:data/cloak.db""#, with: #"store: "sqlite:\#(directory.path)/\#(database)""#
                )
                .replacingOccurrences(of: #"keys: "file:data/keys.json""#, with: #"keys: "env:\#(key)""#)
                .write(toFile: "\(work)/\(target)/cloak.yaml", atomically: true, encoding: .utf8)
        }
        let bin = "\(directory.path)/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let binary = [".build/debug/cloak", ".build/release/cloak"].map {
            TestServer.repositoryRoot.appendingPathComponent($0).path
        }.first { FileManager.default.isExecutableFile(atPath: $0) }
        try FileManager.default.createSymbolicLink(atPath: "\(bin)/cloak", withDestinationPath: try #require(binary))
        let script =
            "set -euo pipefail\n"
            + blocks.joined(separator: "\n").replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(node.port)")
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/bin/bash")
        run.arguments = ["-c", script]
        run.currentDirectoryURL = URL(fileURLWithPath: work)
        var environment = node.variables
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["TOKEN"] = CloakNode.token
        for name in ["CLOAK_VAULT_STORE", "CLOAK_VAULT_KEYS"] { environment[name] = nil }
        environment["OTHER_MASTER_KEY"] = String(repeating: "0c", count: 32)
        environment["ALICE_TOKEN"] = alice
        environment["BOB_TOKEN"] = bob
        run.environment = environment
        let pipe = Pipe()
        run.standardOutput = pipe
        run.standardError = pipe
        try run.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(run.terminationStatus == 0, "\(output)")
        #expect(output.contains("refused: exit 2"))
        #expect(output.contains("queued 6"), "\(output)")
        // The rows example: the new provider's rows are the provider's file, byte for byte.
        #expect(output.contains("['id', 'card_number', 'exp_date', 'name'] 0 0"), "\(output)")
        #expect(output.contains("the same rows"), "\(output)")
        // The advice the page shows is the advice the job wrote (values elided with …).
        let shown = Self.fenced(doc, language: "").first { $0.contains(#""row":2"#) && $0.contains("result") } ?? ""
        let expected = Self.lines(shown.replacingOccurrences(of: ": …\"", with: "\""))
        let advice = Self.lines(output)
            .filter { $0["result"] != nil }
        func brief(_ line: [String: Any]) -> String {
            "\(line["row"] ?? "") \(line["id"] ?? "") \(line["result"] ?? "") \(line["code"] ?? "")"
        }
        #expect(advice.map(brief) == expected.map(brief), "\(output)")
        let mapping = Self.lines(try String(contentsOfFile: "\(work)/mapping.jsonl", encoding: .utf8))
        let byID = Dictionary(
            uniqueKeysWithValues: mapping.compactMap { line in
                (line["id"] as? String).map { ($0, (line["aliases"] as? [String: String])?["card_number"]) }
            })
        #expect(byID.count == 4 && byID["cus_001"] != nil && byID["cus_001"] == byID["cus_006"])
        #expect(byID["cus_001"]??.hasSuffix("4242") == true)
        // The API's run of the same file: the same advice, the same aliases.
        let apiAdvice = Self.lines(try String(contentsOfFile: "\(work)/api-advice.jsonl", encoding: .utf8))
        #expect(apiAdvice.map(brief) == expected.map(brief))
        let apiMapping = Self.lines(try String(contentsOfFile: "\(work)/api-mapping.jsonl", encoding: .utf8))
        #expect(
            apiMapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] }
                == mapping.compactMap { ($0["aliases"] as? [String: String])?["card_number"] })

        // The export: Alice's own approval refused; three records moved, each old alias's new
        // one revealing the same value.
        #expect(output.components(separatedBy: "refused: exit 2").count == 3, "\(output)")
        let renamed = Self.lines(try String(contentsOfFile: "\(work)/renamed.jsonl", encoding: .utf8))
        #expect(renamed.count == 3, "\(output)")
        for line in renamed {
            let old = try #require(line["old"] as? String)
            let new = try #require(line["new"] as? String)
            let here = try node.client().request(
                "GET", "/aliases?q=\(old)", headers: [("Authorization", "Bearer \(alice)")])
            let there = try other.client().request("GET", "/aliases?q=\(new)", headers: Self.auth)
            let value = ((here.json?["data"] as? [String: Any])?[old] as? [String: Any])?["value"] as? String
            #expect(value != nil, "\(here.text)")
            #expect(((there.json?["data"] as? [String: Any])?[new] as? [String: Any])?["value"] as? String == value)
        }
    }

    /// The fenced blocks of `markdown` in `language` ("" for blocks without one).
    static func fenced(_ markdown: String, language: String) -> [String] {
        var blocks: [String] = []
        // Inside a block: its lines, or nil for a block of another language.
        var inside: [Substring]??
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            switch inside {
            case .none:
                if line.hasPrefix("```") { inside = .some(line == "```" + language ? [] : nil) }
            case .some(let lines):
                if line == "```" {
                    if let lines { blocks.append(lines.joined(separator: "\n")) }
                    inside = .none
                } else if var lines {
                    lines.append(line)
                    inside = .some(lines)
                }
            }
        }
        return blocks
    }

    func sqlite(_ arguments: [String]) throws -> String {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        run.arguments = ["-cmd", ".timeout 10000"] + arguments
        let pipe = Pipe()
        run.standardOutput = pipe
        try run.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Polls `condition` until it holds (or fails the test after `timeout` seconds).
    func poll(timeout: Double = 60, _ condition: () throws -> Bool) throws {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return }
            usleep(50_000)
        }
        Issue.record("the condition did not hold within \(timeout) s")
    }
}
