import CloakCore
import CloakCrypto
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakService

/// Issue 57 item 7: rollback restores only a table the ring signed for; heartbeats of nodes gone
/// for a week leave the store.
@Suite(.tags(.racy)) struct BinTableNodeTests {
    static func table(_ issuer: String) throws -> BinTableReader.Table {
        try BinTableReader(format: .csv).read(Array("low,high,issuer\n411111,411111,\(issuer)\n".utf8))
    }

    @Test func rollbackRestoresOnlyASignedTableBefore() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteAliasStore(path: "\(directory.path)/cloak.db")
        let admin = BinTableAdministration(store: store, ring: KeyRing.generate())
        #expect(throws: BinTableAdministration.Failure.self) { try admin.previousTable() }  // nothing before
        _ = try admin.importTable(try Self.table("Good Bank"), source: "good", now: 100)
        let bad = try admin.importTable(try Self.table("Bad Bank"), source: "bad", now: 200)
        let candidate = try admin.previousTable()
        #expect(candidate.table.attributes(of: candidate.table.rows[0]).issuer == "Good Bank")
        let restored = try admin.rollback(to: candidate, now: 300)
        #expect(restored.version == bad.version + 1 && restored.source.hasPrefix("rollback to bins.table.1."))
        // A database writer who replaces the kept table cannot have the ring sign it.
        let kept = try #require(restored.previousTable)
        try store.setMetadata(kept, try Self.table("Forged Bank").encoded())
        #expect(throws: BinTableAdministration.Failure.self) { try admin.previousTable() }
    }

    @Test func heartbeatsOfNodesGoneForAWeekAreRemoved() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteAliasStore(path: "\(directory.path)/cloak.db")
        let now: Int64 = 10_000_000
        for (name, seen) in [("old:1", now - 8 * 86_400), ("new:1", now - 60)] {
            let beat = BinTableNode(node: name, version: 1, sha256: "ab", adoptedAt: seen, seenAt: seen)
            try store.setMetadata(BinTableNode.prefix + name, beat.stored)
        }
        try BinTableNode.prune(store, before: now - BinTableNode.forgetAfterSeconds)
        #expect(try store.metadataNames(prefix: BinTableNode.prefix) == ["nodes.new:1"])
    }
}
