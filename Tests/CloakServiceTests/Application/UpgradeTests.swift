import CloakTesting
import Foundation
import Testing

/// Issue 76: a rolling upgrade across groups. A node of the previous release serves a shared
/// PostgreSQL store; a node of this build starts on it (its schema gains the groups' tables)
/// and both serve side by side: each reveals what the other stored, the old node's deletes take
/// a record out of the new node's groups. A rows export the old node takes fails, nothing
/// written; once every node is upgraded, one counts the old node's records as groups of one.
///
/// Needs the previous release built: `CLOAK_TEST_PREVIOUS` names its checkout (a worktree whose
/// `.build/release/cloak` is built, as `Benchmarks/compare.sh REV .` leaves one under
/// `.build-compare/REV`), and PostgreSQL (`CLOAK_TEST_POSTGRES_URL`).
@Suite(.serialized, .tags(.processes, .sockets, .postgres))
struct UpgradeTests {
    static let previous = ProcessInfo.processInfo.environment["CLOAK_TEST_PREVIOUS"].map {
        URL(fileURLWithPath: $0)
    }

    static func create(_ node: CloakNode, _ items: String) throws -> [String: Any] {
        let created = try node.client().request(
            "POST", "/aliases", json: #"{"data":[\#(items)]}"#, headers: ExportJobTests.nodes)
        #expect(created.status == 201, "\(created.text)")
        return created.json ?? [:]
    }

    static func aliases(_ answer: [String: Any]) -> [String] {
        ((answer["data"] as? [[String: Any]]) ?? []).compactMap {
            (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        }
    }

    @Test(
        .enabled(if: previous != nil, "needs CLOAK_TEST_PREVIOUS: a previous release's checkout, built"),
        .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL"))
    func oldAndNewNodesServeOneStoreSideBySide() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let url = try PostgresTestCluster.freshDatabase()
        let old = try CloakNode(store: url, directory: directory.path, release: Self.previous)
        defer { old.stop() }
        // Before the upgrade: a call of two values (no groups then) and a value alone.
        let oldPair = Self.aliases(try Self.create(old, #"{"value":"4111111111111111"},{"value":"12/29"}"#))
        let oldAlone = Self.aliases(try Self.create(old, #"{"value":"Ada Lovelace"}"#))
        #expect(oldPair.count == 2 && oldAlone.count == 1)

        let new = try ExportJobTests.node(directory, database: "", store: url)
        defer { new.stop() }
        // The new node groups a call's values; the old node reveals them, and the new node what
        // the old one stored.
        let grouped = try Self.create(
            new, #"{"value":"5555555555554444","field":"card_number"},{"value":"01/30","field":"exp_date"}"#)
        #expect((grouped["group"] as? String)?.hasPrefix("grp_") == true, "\(grouped)")
        let newPair = Self.aliases(grouped)
        let seenByOld = try ExportJobTests.reveal(old, newPair)
        #expect(seenByOld[newPair[0]] == "5555555555554444" && seenByOld[newPair[1]] == "01/30")
        let seenByNew = try ExportJobTests.reveal(new, oldPair + oldAlone)
        #expect(seenByNew[oldPair[0]] == "4111111111111111" && seenByNew[oldAlone[0]] == "Ada Lovelace")
        // The old node still stores beside the new one, and deletes a part of the new group.
        _ = try Self.create(old, #"{"value":"Grace Hopper"}"#)
        let deleted = try old.client().request(
            "DELETE", "/aliases/\(newPair[1])", headers: ExportJobTests.nodes)
        #expect(deleted.status == 204, "\(deleted.text)")

        // A rows export asked while only the old node serves: it takes the job and fails it,
        // since it cannot read the layout, with nothing written (docs/jobs.md: upgrade every
        // node before the first rows export).
        let keys = try ExportJobTests.keypair(directory, "recipient", email: "recipient@example.com")
        new.stop()
        let early = try new.command(
            ["export", "--everything", "--layout", "rows", "--detach", "--recipient", keys.publicKey],
            environment: ExportJobTests.as_(ExportJobTests.alice))
        let earlyID = try #require(ImportJobTests.jobID(early.output), "\(early.output)")
        // (Read with this build's command: the old one no longer opens a store of a newer schema.)
        try ImportJobTests().poll { try ImportJobTests.status(new, earlyID)["state"] as? String == "failed" }
        let failed = try ImportJobTests.status(new, earlyID)
        #expect((failed["failure"] as? String)?.contains("another version") == true, "\(failed)")
        #expect(failed["exported"] as? Int == 0)

        // The upgrade done (the old node stopped), the same ask on a node of this build: the old
        // node's four records are groups of one, and the group lost a part.
        old.stop()
        let upgraded = try ExportJobTests.node(directory, database: "", store: url)
        defer { upgraded.stop() }
        let asked = try upgraded.command(
            ["export", "--everything", "--layout", "rows", "--recipient", keys.publicKey],
            environment: ExportJobTests.as_(ExportJobTests.alice))
        #expect(asked.status == 0, "\(asked.output)")
        let counted = ExportJobTests.json(asked.output)
        #expect(counted["rows"] as? Int == 5, "\(counted)")
        #expect(counted["groups_of_one"] as? Int == 4 && counted["partial_groups"] as? Int == 1, "\(counted)")
        #expect(counted["fields"] as? [String] == ["card_number", "value"], "\(counted)")
    }
}
