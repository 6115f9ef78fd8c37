import CloakTesting
import Foundation
import Testing

/// Review V, items 2 and 3: an export on a vault that keeps serving. Records stored between the
/// count and the write move the store's page bounds but are not in the selection, so they never
/// fail the export; a selected record deleted meanwhile still does, and what the failed write
/// had sealed is deleted at once and never handed out (`cloak jobs file` refuses before it
/// writes a byte).
@Suite(.serialized, .tags(.racy, .processes, .sockets))
struct ExportBesideTrafficTests {
    @Test func anExportBesideAThousandCreatesOnSQLiteIsWhole() throws {
        try exportBesideCreates(store: nil)
    }

    @Test(.enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL"), .tags(.postgres))
    func anExportBesideAThousandCreatesOnPostgreSQLIsWhole() throws {
        try exportBesideCreates(store: try PostgresTestCluster.freshDatabase())
    }

    func exportBesideCreates(store: String?) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recipient = try ExportJobTests.keypair(directory, "recipient", email: "recipient@example.com")
        let node = try ExportJobTests.node(
            directory, database: "cloak.db", store: store)
        defer { node.stop() }
        func storeCards(_ cards: [String]) throws -> [String] {
            var aliases: [String] = []
            for part in stride(from: 0, to: cards.count, by: 100) {
                aliases += try ExportJobTests.store(
                    node, cards: Array(cards[part..<min(part + 100, cards.count)]), cvcs: [])
            }
            return aliases
        }
        func ask() throws -> (id: String, rows: Int, approve: [String]) {
            let asked = try node.command(
                ["export", "--everything", "--recipient", recipient.publicKey],
                environment: ExportJobTests.as_(ExportJobTests.alice))
            #expect(asked.status == 0, "\(asked.output)")
            let id = try #require(ImportJobTests.jobID(asked.output))
            let counted = ExportJobTests.json(asked.output)
            let rows = try #require(counted["rows"] as? Int, "\(asked.output)")
            return (
                id, rows,
                [
                    "jobs", "approve", id, "--rows", "\(rows)", "--fingerprint",
                    try #require(counted["recipient_fingerprint"] as? String), "--digest",
                    try #require(counted["selection_digest"] as? String),
                ]
            )
        }

        // Two pages of the store's walk, counted.
        let selected = try storeCards(ImportJobTests.cards(600, seed: 90))
        let first = try ask()
        #expect(first.rows == 600)
        // A thousand creates between the count and the write (e3f4d6f failed the job after 305
        // on SQLite: "the selection changed since it was counted and approved").
        _ = try storeCards(ImportJobTests.cards(1_000, seed: 91))
        let approved = try node.command(first.approve, environment: ExportJobTests.as_(ExportJobTests.bob))
        #expect(approved.status == 0, "\(approved.output)")
        let done = try node.command(["jobs", "status", "--follow", first.id])
        #expect(done.status == 0, "\(done.output)")
        #expect(ExportJobTests.json(done.output)["exported"] as? Int == 600, "\(done.output)")
        let file = try node.command(["jobs", "file", first.id], environment: ExportJobTests.as_(ExportJobTests.alice))
        #expect(file.status == 0 && file.output.utf8.count > 1_000)

        // A selected record deleted after the count: the write is not the approved selection.
        let second = try ask()
        #expect(second.rows == 1_600)
        let deleted = try node.client().request(
            "DELETE", "/aliases/\(selected[17])", headers: [("Authorization", "Bearer \(CloakNode.token)")])
        #expect(deleted.status == 200 || deleted.status == 204, "\(deleted.text)")
        #expect(try node.command(second.approve, environment: ExportJobTests.as_(ExportJobTests.bob)).status == 0)
        let failed = try node.command(["jobs", "status", "--follow", second.id])
        #expect(failed.status == 1, "\(failed.output)")
        let report = ExportJobTests.json(failed.output)
        #expect(report["state"] as? String == "failed", "\(failed.output)")
        #expect((report["failure"] as? String)?.contains("selection changed") == true, "\(failed.output)")
        // Its sealed chunks are gone, and the command line refuses before writing anything.
        if store == nil {
            #expect(
                try ExportJobTests.sqliteText(
                    directory, "SELECT count(*) FROM job_chunks WHERE part = 3 AND job = '\(second.id)'"
                ).hasPrefix("0"))
        }
        let refused = try node.command(["jobs", "file", second.id])
        #expect(refused.status != 0, "\(refused.output.prefix(200))")
        #expect(refused.output.contains("the job is failed"), "\(refused.output.prefix(200))")
        #expect(refused.output.utf8.count < 300, "\(refused.output.prefix(200))")
        // Nor a mapping of an export, nor of a job not done.
        let mapping = try node.command(["jobs", "mapping", first.id])
        #expect(mapping.status != 0 && mapping.output.contains("no mapping file"), "\(mapping.output)")

        // Review V, item 6: each job's end is an event with its counts, and what the command
        // line handed out is audited like the API's downloads.
        let bearer = [("Authorization", "Bearer \(CloakNode.token)")]
        try ImportJobTests().poll {
            let ends = try node.client().request("GET", "/admin/audit?action=job_end", headers: bearer)
            return ((ends.json?["data"] as? [[String: Any]]) ?? []).count >= 2
        }
        let ends = try node.client().request("GET", "/admin/audit?action=job_end", headers: bearer).text
        #expect(ends.contains(first.id) && ends.contains(second.id), "\(ends)")
        #expect(ends.contains(#""exported":"600""#) && ends.contains("selection changed"), "\(ends)")
        let downloads = try node.client().request("GET", "/admin/audit?action=job_download", headers: bearer).text
        #expect(downloads.contains(first.id) && downloads.contains("cli"), "\(downloads)")
        #expect(!downloads.contains(second.id), "a refused download hands out nothing and records no download")
    }
}
