import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// A subject that remembers what the vault noted for it, as the service's `Outcome` does.
private final class Notebook: VaultAuditSubject {
    let notes = Mutex<[(AuditEvent.Draft, Bool)]>([])

    func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation) -> AuditEvent.Draft?
    {
        AuditEvent.Draft(
            at: at, action: .delete, tokenID: "tok-1", client: "198.51.100.7", aliasReference: aliasReference,
            result: result)
    }

    func noted(_ drafts: [AuditEvent.Draft], stored: Bool) { notes.withLock { $0 += drafts.map { ($0, stored) } } }
    var stored: [AuditEvent.Draft] { notes.withLock { $0.filter(\.1).map(\.0) } }
}

/// The heads a vault told, in order.
private final class HeadLog: Sendable {
    private let heads = Mutex<[AuditVerifier.Head]>([])
    func add(_ head: AuditVerifier.Head) { heads.withLock { $0.append(head) } }
    var last: AuditVerifier.Head? { heads.withLock { $0.last } }
}

/// Audit events in the store (issue 59): a change's event commits with the change, a chain
/// verifies whole and names the first event someone without the key deleted, altered or cut.
@Suite struct AuditTrailTests {
    private static func auditing(_ heads: HeadLog? = nil) -> Vault.Settings {
        var settings = Vault.Settings(volatileTTLSeconds: 60)
        settings.audit = AuditSettings(node: "node-1:8080", retentionDays: 400) { head in heads?.add(head) }
        return settings
    }

    @Test func aChangeCommitsItsEventAndAFailedOneLeavesNone() throws {
        try withVaultHarness { h in
            let vault = try h.openVault(settings: Self.auditing())
            let alias = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
            let notebook = Notebook()
            let deleted = try VaultAuditing.current.withValue(notebook) { try vault.deleteSync(alias) }
            #expect((try? deleted.get()) != nil)
            // The event is in the store once the delete is answered, and was told as stored.
            let events = try h.inspector().auditEvents(AuditQuery()).events
            #expect(events.count == 1)
            #expect(events.first?.draft == notebook.stored.first)
            #expect(events.first?.draft.aliasReference == vault.auditReference(alias))
            #expect(events.first?.draft.result == .ok)
            // Deleting again fails (not found): its savepoint is rolled back with its note.
            let again = try VaultAuditing.current.withValue(notebook) { try vault.deleteSync(alias) }
            #expect((try? again.get()) == nil)
            #expect(try h.inspector().auditEvents(AuditQuery()).events.count == 1)
            #expect(notebook.stored.count == 1)
            // Nothing of the value or the alias is in the row.
            let row = try #require(events.first)
            let text = "\(row.draft)"
            #expect(!text.contains("4111111111111111") && !text.contains(alias))
        }
    }

    /// A job's step and the event that records it (review V, item 6: an export's count and its
    /// last chunk): both commit, or neither does.
    @Test func aStepsEventCommitsWithTheStepOrNotAtAll() throws {
        try withVaultHarness { h in
            let vault = try h.openVault(settings: Self.auditing())
            let counted = AuditEvent.Draft(
                at: 1_000, action: .jobExportCounted, tokenID: "tok-1", client: "job", aliasReference: nil,
                result: .ok)
            struct Lost: Error {}
            let failed: Result<Void, any Error> = try waitForCompletion("withStore") { done in
                vault.withStore(
                    recording: [counted],
                    { store in
                        try store.setMetadata("test_step", [1])
                        throw Lost()
                    }, completion: done)
            }
            #expect((try? failed.get()) == nil)
            #expect(try h.inspector().metadata("test_step") == nil)
            #expect(try h.inspector().auditEvents(AuditQuery()).events.isEmpty)
            let stepped: Result<Void, any Error> = try waitForCompletion("withStore") { done in
                vault.withStore(
                    recording: [counted], { store in try store.setMetadata("test_step", [2]) }, completion: done)
            }
            #expect((try? stepped.get()) != nil)
            // Both are in the store once the step is answered.
            #expect(try h.inspector().metadata("test_step") == [2])
            #expect(try h.inspector().auditEvents(AuditQuery()).events.map(\.draft) == [counted])
        }
    }

    @Test func recordedEventsChainAndVerify() throws {
        try withVaultHarness { h in
            let heads = HeadLog()
            let vault = try h.openVault(settings: Self.auditing(heads))
            let drafts = (0..<25).map {
                AuditEvent.Draft(
                    at: 1_800_000_000_000 + Int64($0), action: .reveal, tokenID: "tok-\($0 % 3)", client: "-",
                    result: .ok)
            }
            for chunk in stride(from: 0, to: drafts.count, by: 5) {
                let done: Result<Void, VaultError> = try waitForCompletion("recordAudit") { done in
                    vault.recordAudit(Array(drafts[chunk..<chunk + 5]), completion: done)
                }
                try done.get()
            }
            vault.close()
            // At stop the head is told.
            let head = try #require(heads.last)
            #expect(head.seq == 25)
            let verified = try Vault.verifyAudit(try h.inspector(), keys: h.keys, heads: [head])
            #expect(verified.events == 25 && verified.chains == 1)
            // Another ring's key cannot verify them (nor have made them).
            #expect(throws: AuditVerifier.Break.self) {
                try Vault.verifyAudit(try h.inspector(), keys: KeyRing.generate())
            }
        }
    }

    @Test(arguments: Tampering.allCases)
    func tamperingIsNamed(_ tampering: Tampering) throws {
        try withVaultHarness { h in
            let heads = HeadLog()
            let vault = try h.openVault(settings: Self.auditing(heads))
            let drafts = (1...10).map {
                AuditEvent.Draft(
                    at: 1_800_000_000_000 + Int64($0), action: .create, tokenID: "tok", client: "-", result: .ok)
            }
            // Five commits of two: blocks starting at 1, 3, 5, 7 and 9.
            for pair in stride(from: 0, to: 10, by: 2) {
                let done: Result<Void, VaultError> = try waitForCompletion("recordAudit") { done in
                    vault.recordAudit(Array(drafts[pair..<pair + 2]), completion: done)
                }
                try done.get()
            }
            vault.close()
            let head = try #require(heads.last)
            try h.execute(tampering.sql)
            // Whatever a row says, a search and the sweep read past it without trapping.
            _ = try h.inspector().auditEvents(AuditQuery(limit: 500))
            let settings = AuditSettings(node: "node", retentionDays: 400) { _ in }
            let sweeper = AuditTrail(
                chain: AuditChain(id: "sweeper/1/0", key: h.keys.derivedMAC(purpose: AuditChain.keyPurpose)),
                settings: settings, sweeps: true)
            #expect(try !sweeper.trim(h.inspector(), before: 1_000_000, limit: 100))
            do {
                _ = try Vault.verifyAudit(try h.inspector(), keys: h.keys, heads: [head])
                Issue.record("\(tampering) was not seen")
            } catch let broken as AuditVerifier.Break {
                // A mark raised past every block is the index's fact (when every block was
                // indexed by then, no block of the chain is named for it).
                #expect(
                    broken.seq == tampering.named
                        || (tampering == .hiddenFromAliasSearches && broken.chain == "(the alias index)"),
                    "\(broken)")
            }
        }
    }

    /// Review V, item 6: a node that starts logs the head of each chain it left before (a
    /// crash can keep the last head from being logged), so a later cut is seen against it.
    @Test func aStartingNodeLogsTheHeadsItsEarlierChainsLeft() throws {
        try withVaultHarness { h in
            let before = HeadLog()
            var settings = Self.auditing(before)
            let vault = try h.openVault(settings: settings)
            for n in 0..<3 {
                let draft = AuditEvent.Draft(
                    at: 1_800_000_000_000 + Int64(n), action: .reveal, tokenID: "tok", client: "-", result: .ok)
                let done: Result<Void, VaultError> = try waitForCompletion("recordAudit") { done in
                    vault.recordAudit([draft], completion: done)
                }
                try done.get()
            }
            vault.close()
            let left = try #require(before.last)
            let after = HeadLog()
            settings = Self.auditing(after)
            let again = try h.openVault(settings: settings)
            defer { again.close() }
            #expect(after.last == left, "\(String(describing: after.last)) \(left)")
        }
    }

    /// Review V, item 6: the newest blocks of one chain deleted once indexed (what a database
    /// writer would do to hide a crashed node's last events). Verify names that chain and its
    /// first missing event from the node's logged head, never the first block of another chain;
    /// without heads it names the index's mark, not a chain nobody touched.
    @Test func cuttingOffTheNewestBlocksNamesTheChainCut() throws {
        try withVaultHarness { h in
            var heads: [String: HeadLog] = [:]
            for node in ["a-node", "b-node"] {
                let log = HeadLog()
                heads[node] = log
                var settings = Vault.Settings(volatileTTLSeconds: 60)
                settings.audit = AuditSettings(node: node, retentionDays: 400) { log.add($0) }
                let vault = try h.openVault(settings: settings)
                for pair in stride(from: 0, to: 10, by: 2) {
                    let drafts = (pair..<pair + 2).map {
                        AuditEvent.Draft(
                            at: 1_800_000_000_000 + Int64($0), action: .reveal, tokenID: "tok", client: "-",
                            aliasReference: "ar_\($0)", result: .ok)
                    }
                    let done: Result<Void, VaultError> = try waitForCompletion("recordAudit") { done in
                        vault.recordAudit(drafts, completion: done)
                    }
                    try done.get()
                }
                vault.close()
            }
            // Every block indexed, then b-node's newest two deleted (the table's last rows).
            let indexer = AuditTrail(
                chain: AuditChain(id: "indexer/1/0", key: h.keys.derivedMAC(purpose: AuditChain.keyPurpose)),
                settings: AuditSettings(node: "indexer", retentionDays: 400) { _ in }, sweeps: true)
            indexer.indexAliases(try h.inspector())
            let cut = try #require(heads["b-node"]?.last)
            try h.execute("DELETE FROM audit_blocks WHERE chain = '\(cut.chain)' AND first_seq >= 7")
            let logged = try ["a-node", "b-node"].map { try #require(heads[$0]?.last) }
            do {
                _ = try Vault.verifyAudit(try h.inspector(), keys: h.keys, heads: logged)
                Issue.record("the cut was not seen")
            } catch let broken as AuditVerifier.Break {
                #expect(broken.chain == cut.chain && broken.seq == cut.seq, "\(broken)")
            }
            do {
                _ = try Vault.verifyAudit(try h.inspector(), keys: h.keys)
                Issue.record("the cut was not seen without heads")
            } catch let broken as AuditVerifier.Break {
                #expect(broken.chain == "(the alias index)" && broken.reason.contains("--heads"), "\(broken)")
            }
        }
    }

    enum Tampering: String, CaseIterable, Sendable {
        case altered, unreadable, hiddenFromSearches, placeColumnAltered, forgedBeforeTheStart, placeOverflow
        case hiddenFromAliasSearches, deletedInTheMiddle, deletedAtTheStart, cutOff, swapped

        var sql: String {
            switch self {
            case .altered:
                return
                    "UPDATE audit_blocks SET body = CAST(replace(CAST(body AS TEXT), 'create', 'delete') AS BLOB) WHERE first_seq = 3"
            case .unreadable: return "UPDATE audit_blocks SET body = x'00000001' WHERE first_seq = 5"
            case .hiddenFromSearches: return "UPDATE audit_blocks SET last_at = 0 WHERE first_seq = 7"
            case .placeColumnAltered: return "UPDATE audit_blocks SET last_seq = 0 WHERE first_seq = 5"
            case .forgedBeforeTheStart:
                // A row verify would not have read from place 1 on (it ends "before" it starts).
                return """
                    INSERT INTO audit_blocks (chain, first_seq, last_seq, last_at, body, prev, mac)
                    SELECT chain, 0, -1, last_at, body, prev, mac FROM audit_blocks WHERE first_seq = 1
                    """
            case .placeOverflow:
                return """
                    INSERT INTO audit_blocks (chain, first_seq, last_seq, last_at, body, prev, mac)
                    SELECT chain, 9223372036854775807, 9223372036854775807, 0, body, prev, mac FROM audit_blocks
                    WHERE first_seq = 9
                    """
            case .hiddenFromAliasSearches:
                return "INSERT OR REPLACE INTO audit_alias_mark (id, upto) VALUES (1, 1000000)"
            case .deletedInTheMiddle: return "DELETE FROM audit_blocks WHERE first_seq = 5"
            case .deletedAtTheStart: return "DELETE FROM audit_blocks WHERE first_seq <= 3"
            case .cutOff: return "DELETE FROM audit_blocks WHERE first_seq >= 9"
            case .swapped:
                return """
                    UPDATE audit_blocks SET first_seq = 100 WHERE first_seq = 3;
                    UPDATE audit_blocks SET first_seq = 3, last_seq = 4 WHERE first_seq = 5;
                    UPDATE audit_blocks SET first_seq = 5, last_seq = 6 WHERE first_seq = 100;
                    """
            }
        }

        /// The event verify names first (a block's first, or the first one missing).
        var named: Int64 {
            switch self {
            case .altered: return 3
            case .unreadable: return 5
            case .hiddenFromSearches: return 7
            case .placeColumnAltered: return 5
            case .forgedBeforeTheStart: return 0
            case .placeOverflow: return .max
            case .hiddenFromAliasSearches: return 1
            case .deletedInTheMiddle: return 5
            case .deletedAtTheStart: return 4
            case .cutOff: return 10
            case .swapped: return 3
            }
        }
    }

    @Test func theSweepTrimsOldEventsAndTheChainStillVerifies() throws {
        try withVaultHarness { h in
            let store = try SQLiteAliasStore(path: h.storePath)
            let key = h.keys.derivedMAC(purpose: AuditChain.keyPurpose)
            var old = AuditChain(id: "old-node/1/0", key: key)
            // Six commits of one event: six blocks.
            let blocks = (1...6).flatMap {
                old.seal([
                    AuditEvent.Draft(at: Int64($0) * 1000, action: .create, tokenID: "tok", client: "-", result: .ok)
                ])
            }
            try store.begin()
            try store.appendAuditBlocks(blocks)
            try store.commit()
            let settings = AuditSettings(node: "node", retentionDays: 400) { _ in }
            let trail = AuditTrail(chain: AuditChain(id: "node/2/0", key: key), settings: settings, sweeps: true)
            // Two rounds of three: each records what the chain now starts at.
            #expect(try trail.trim(store, before: 5_000, limit: 3))
            #expect(try Vault.verifyAudit(store, keys: h.keys).events == 4)
            #expect(try trail.trim(store, before: 100_000, limit: 3))
            #expect(try !trail.trim(store, before: 100_000, limit: 3))
            let verified = try Vault.verifyAudit(store, keys: h.keys)
            #expect(verified.events == 2 && verified.chains == 1)  // the two trims' own events
            let trims = try store.auditEvents(AuditQuery(action: AuditTrim.action.text)).events
            #expect(trims.first?.draft.fact("chain:old-node/1/0") == "gone 7")
            // Deleting more of a trimmed chain than the trim did is seen.
            var again = AuditChain(id: "old-node/3/0", key: key)
            try store.begin()
            for at in 1...4 {
                try store.appendAuditBlocks(
                    again.seal([
                        AuditEvent.Draft(
                            at: Int64(at) * 1000, action: .create, tokenID: "tok", client: "-", result: .ok)
                    ]))
            }
            try store.commit()
            #expect(try trail.trim(store, before: 2_500, limit: 10))
            _ = try Vault.verifyAudit(store, keys: h.keys)
            try h.execute("DELETE FROM audit_blocks WHERE chain = 'old-node/3/0' AND first_seq = 3")
            #expect(throws: AuditVerifier.Break.self) { try Vault.verifyAudit(store, keys: h.keys) }
        }
    }
}

/// SQLite indexes a block's alias references as it writes the block while every earlier block
/// is indexed (issue 74: the upkeep read each block back to index it); behind the mark, the
/// next append indexes a round of the blocks behind first, so the mark catches up under load;
/// an append outside a transaction (a `cloak keys` command's) is a writer's transaction of its
/// own, so two commands' statements never interleave between the look at the mark and the move.
@Suite struct SQLiteAuditIndexTests {
    @Test func blocksAreIndexedAsWrittenAndTheMarkCatchesUp() throws {
        try withVaultHarness { h in
            let store = try SQLiteAliasStore(path: h.storePath)
            var chain = AuditChain(id: "node/1/0", key: h.keys.derivedMAC(purpose: AuditChain.keyPurpose))
            func blocks(_ reference: String) -> [AuditBlock] {
                chain.seal([
                    AuditEvent.Draft(
                        at: 1_800_000_000_000, action: .reveal, tokenID: "tok", client: "-",
                        aliasReference: reference, result: .ok)
                ])
            }
            func append(_ reference: String) throws {
                try store.begin()
                try store.appendAuditBlocks(blocks(reference))
                try store.commit()
            }
            func mark() throws -> Int64 { try #require(try h.inspector().auditIndexMark()) }
            try append("ar_00000000000000a1")
            try append("ar_00000000000000a2")
            #expect(try h.rowCount("audit_aliases") == 2)
            #expect(try mark() == 2)
            #expect(try store.indexAuditAliases(limit: 100) == 0)
            // A block written without its index (as a node before this change did): the next
            // append indexes it first, then its own.
            try h.execute(
                """
                INSERT INTO audit_blocks (chain, first_seq, last_seq, last_at, body, prev, mac)
                SELECT 'other/1/0', first_seq, last_seq, last_at, body, prev, mac FROM audit_blocks WHERE id = 1
                """)
            #expect(try mark() == 2)
            try append("ar_00000000000000a3")
            #expect(try mark() == 4)
            #expect(try h.rowCount("audit_aliases") == 4)
            #expect(try store.indexAuditAliases(limit: 100) == 0)
            // Outside a transaction: its own, and nothing left open.
            try store.appendAuditBlocks(blocks("ar_00000000000000a4"))
            #expect(!store.isInTransaction)
            #expect(try mark() == 5)
            #expect(try h.rowCount("audit_aliases") == 5)
            let found = try store.auditBlocks(
                before: nil, from: nil, aliasReference: "ar_00000000000000a4", limit: 10)
            #expect(found.map(\.id) == [5])
        }
    }
}

/// Someone who can write the database but holds no key cannot have the sweep delete events for
/// them: it goes by the sealed events' times and stops at a row that is not authentic.
@Suite struct AuditSweepTamperingTests {
    @Test func theSweepGoesByTheSealedTimesNotTheColumn() throws {
        try withVaultHarness { h in
            let store = try SQLiteAliasStore(path: h.storePath)
            let key = h.keys.derivedMAC(purpose: AuditChain.keyPurpose)
            var young = AuditChain(id: "young/1/0", key: key)
            let now = VaultAuditing.nowMilliseconds()
            try store.begin()
            for offset in 0..<3 {
                try store.appendAuditBlocks(
                    young.seal([
                        AuditEvent.Draft(
                            at: now + Int64(offset), action: .reveal, tokenID: "t", client: "-", result: .ok)
                    ]))
            }
            try store.commit()
            // Made to look a year old.
            try h.execute("UPDATE audit_blocks SET last_at = 1000 WHERE chain = 'young/1/0'")
            let settings = AuditSettings(node: "node", retentionDays: 400) { _ in }
            let trail = AuditTrail(chain: AuditChain(id: "node/3/0", key: key), settings: settings, sweeps: true)
            #expect(try !trail.trim(store, before: now - 1000, limit: 100))
            #expect(try store.auditChain("young/1/0", after: .min, limit: 10).count == 3)
            #expect(throws: AuditVerifier.Break.self) { try Vault.verifyAudit(store, keys: h.keys) }
            // A row written without the key, its events old: never swept (verify names it).
            let old = AuditBlockBody.encode([
                AuditEvent.Draft(at: 1000, action: .reveal, tokenID: "t", client: "-", result: .ok)
            ])
            try store.begin()
            try store.appendAuditBlocks([
                AuditBlock(
                    chain: "old/1/0", first: 1, body: old, previousMAC: AuditChain.origin,
                    mac: [UInt8](repeating: 0, count: 32))
            ])
            try store.commit()
            #expect(try !trail.trim(store, before: now - 1000, limit: 100))
            #expect(try store.auditChain("old/1/0", after: .min, limit: 10).count == 1)
        }
    }
}

/// A commit whose outcome was not known (a connection broken after COMMIT, a failover): the
/// chain reads what the store holds before its next write, so it never reuses a place.
@Suite struct AuditTrailSettleTests {
    @Test func aChainGoesOnAfterWhatTheStoreHolds() throws {
        try withVaultHarness { h in
            let store = try SQLiteAliasStore(path: h.storePath)
            let key = h.keys.derivedMAC(purpose: AuditChain.keyPurpose)
            let settings = AuditSettings(node: "node", retentionDays: 400) { _ in }
            let trail = AuditTrail(chain: AuditChain(id: "node/9/0", key: key), settings: settings, sweeps: false)
            let draft = AuditEvent.Draft(at: 1, action: .create, tokenID: "t", client: "-", result: .ok)
            // Committed, though the writer was told it failed.
            let before = trail.chain.mark
            try store.begin()
            try store.appendAuditBlocks(trail.chain.seal([draft, draft]))
            try store.commit()
            trail.unsure = before
            try trail.settle(store)
            #expect(trail.chain.seq == 2)
            // Not committed: the chain goes back to the mark.
            let again = trail.chain.mark
            _ = trail.chain.seal([draft])
            trail.unsure = again
            try trail.settle(store)
            #expect(trail.chain.mark == again)
            try store.begin()
            try store.appendAuditBlocks(trail.chain.seal([draft]))
            try store.commit()
            #expect(try Vault.verifyAudit(store, keys: h.keys).events == 3)
        }
    }
}
