import CloakCore
import CloakCrypto
import CloakTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// Issue 74, part 5: audited creates on PostgreSQL are a group commit again. A batch's new
/// records and aliases go in one statement and its events in one more, in one transaction
/// (``VaultExecutor``'s `insertingNewRecords`), instead of a savepoint and four statements a
/// value; and every answered value still has its event, committed with it.
@Suite(
    .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
    .tags(.postgres))
struct PostgreSQLAuditedCreateTests {
    /// The subject of a token's creates: every event told, and whether it was stored.
    final class Creator: VaultAuditSubject {
        let notes = Mutex<[(AuditEvent.Draft, Bool)]>([])

        func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation) -> AuditEvent
            .Draft?
        {
            AuditEvent.Draft(
                at: at, action: .create, tokenID: "tok-creator", client: "198.51.100.7",
                aliasReference: aliasReference, result: result)
        }

        func noted(_ drafts: [AuditEvent.Draft], stored: Bool) { notes.withLock { $0 += drafts.map { ($0, stored) } } }
        var told: [(AuditEvent.Draft, Bool)] { notes.withLock { $0 } }
    }

    /// A vault on a fresh database, auditing; its keys and the database's URL.
    static func auditingVault(storeTimeoutMilliseconds: Int? = nil) throws -> (Vault, KeyRing, String) {
        let url = try PostgresTestCluster.freshDatabase()
        let keys = KeyRing.generate()
        var settings = Vault.Settings(volatileTTLSeconds: 60)
        settings.storeTimeoutMilliseconds = storeTimeoutMilliseconds
        settings.audit = AuditSettings(node: "node-pg:8080", retentionDays: 400) { _ in }
        let store = try PostgreSQLAliasStore(url: url)
        return (try Vault(stores: [store], keys: keys, settings: settings), keys, url)
    }

    /// Queues each request as its own audited create while the executor is held, so that they
    /// make one batch, traced; returns each request's result once all are answered.
    static func oneBatch(
        of requests: [AliasRequest], on vault: Vault, subject: Creator, recorder: BatchRecorder
    ) throws -> [Result<[RevealedRecord], VaultError>] {
        let jobs = QueuedJobs()
        let hold = jobs.holdExecutor(of: vault)
        defer { hold.open() }
        #expect(hold.entered.wait(timeout: .now() + 10) == .success)
        let results = Mutex<[Int: Result<[RevealedRecord], VaultError>]>([:])
        let done = DispatchGroup()
        for (index, request) in requests.enumerated() {
            done.enter()
            VaultAuditing.current.withValue(subject) {
                VaultTracing.current.withValue(RecordingTrace(id: index, recorder: recorder)) {
                    vault.createAliases([request]) { result in
                        results.withLock { $0[index] = result }
                        done.leave()
                    }
                }
            }
        }
        hold.open()
        #expect(done.wait(timeout: .now() + 15) == .success)
        let answered = results.withLock { $0 }
        return requests.indices.map { answered[$0] ?? .failure(.unavailable("no answer")) }
    }

    @Test func aGroupCommitOfAuditedCreatesIsOneStatementForItsValuesAndOneForItsEvents() throws {
        let (vault, keys, url) = try Self.auditingVault()
        let inspector = try PostgreSQLAliasStore(url: url)
        defer { vault.close() }
        // Stored before, unaudited: one in the format asked again (found, answered with its
        // alias), one only in another format (the rest of its job issues the second alias).
        let found = try vault.alias("4111111111111111", .FPE_SIX_T_FOUR)
        _ = try vault.alias("5555555555554444", .UUID)
        var requests = (0..<10).map {
            AliasRequest(value: "new value \($0)", format: .UUID, storage: .persistent)
        }
        requests.append(AliasRequest(value: "4111111111111111", format: .FPE_SIX_T_FOUR, storage: .persistent))
        let subject = Creator(), recorder = BatchRecorder()
        let plain = try Self.oneBatch(of: requests, on: vault, subject: subject, recorder: recorder)
        let secondFormat = try Self.oneBatch(
            of: [AliasRequest(value: "5555555555554444", format: .FPE_SIX_T_FOUR, storage: .persistent)],
            on: vault, subject: subject, recorder: recorder)

        let answers = try (plain + secondFormat).map { try #require(try $0.get().first) }
        #expect(answers[10].aliases.contains { $0.alias == found })
        #expect(answers[11].aliases.contains { $0.matches(.FPE_SIX_T_FOUR, luhnValid: true) })
        // One batch for the eleven; its records, aliases, events and commit in four statements
        // (a savepoint and four statements a value before).
        let batches = recorder.batches
        #expect(batches.count == 2, "\(batches)")
        let first = try #require(batches.first { $0.serving.count == 11 }?.summary)
        #expect(first.jobs == 11 && first.failedJobs == 0)
        #expect(first.statements <= 4, "\(first)")

        // Every answer's event was stored, and is in the store, chained and verifiable.
        let told = subject.told
        #expect(told.count == 12 && told.allSatisfy(\.1))
        let issued = answers.enumerated().map { index, answer in
            let format: AliasFormatName = index < 10 ? .UUID : .FPE_SIX_T_FOUR
            return answer.aliases.first { $0.matches(format, luhnValid: true) }!.alias
        }
        let references = Set(issued.map(vault.auditReference))
        #expect(Set(told.compactMap(\.0.aliasReference)) == references)
        let stored = try inspector.auditEvents(AuditQuery(action: "create", limit: 100)).events
        #expect(Set(stored.compactMap(\.draft.aliasReference)) == references)
        #expect(try Vault.verifyAudit(inspector, keys: keys).events == 12)
    }

    /// A value the batch's statement cannot store (PostgreSQL's text holds no NUL) fails it:
    /// nothing of it was written, and each create runs on its own, in its savepoint. The others
    /// are stored with their events; the bad one fails with none, and leaves no record.
    @Test func aBatchStatementThatFailsLeavesEachCreateToItsOwnSavepoint() throws {
        let (vault, keys, url) = try Self.auditingVault()
        let inspector = try PostgreSQLAliasStore(url: url)
        defer { vault.close() }
        var requests = (0..<4).map { AliasRequest(value: "kept \($0)", format: .UUID, storage: .persistent) }
        requests.insert(
            AliasRequest(value: "refused", format: .UUID, storage: .persistent, classifiers: ["bad\u{0}"]), at: 2)
        let subject = Creator(), recorder = BatchRecorder()
        let results = try Self.oneBatch(of: requests, on: vault, subject: subject, recorder: recorder)

        for (index, result) in results.enumerated() {
            if index == 2 {
                #expect(throws: VaultError.self) { try result.get() }
            } else {
                #expect(try result.get().first?.aliases.count == 1)
            }
        }
        let told = subject.told
        #expect(told.count == 4 && told.allSatisfy(\.1))
        #expect(try inspector.auditEvents(AuditQuery(action: "create", limit: 100)).events.count == 4)
        #expect(try inspector.recordCount() == 4)
        #expect(try Vault.verifyAudit(inspector, keys: keys).events == 4)
    }

    /// A block is written with its alias index, in its own statement: the upkeep finds nothing
    /// to index (and rewrites no block's row), and a search by alias finds it through the index.
    @Test func aBlockIsWrittenWithItsAliasIndex() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let store = try PostgreSQLAliasStore(url: url)
        var chain = AuditChain(id: "node/1/0", key: HMACKey(SymmetricKey([UInt8](repeating: 7, count: 32))))
        let references = ["ar_00000000000000a1", "ar_00000000000000b2"]
        let drafts = references.map {
            AuditEvent.Draft(
                at: 1_800_000_000_000, action: .create, tokenID: "tok", client: "-", aliasReference: $0, result: .ok)
        }
        try store.begin()
        try store.appendAuditBlocks(chain.seal(drafts) + chain.seal([drafts[0]]))
        try store.commit()
        let probe = try PostgreSQLConnection(url: url)
        #expect(try probe.query("SELECT count(*)::int8 FROM audit_aliases").first?.int(0) == 3)
        #expect(try probe.query("SELECT count(*)::int8 FROM audit_blocks WHERE NOT indexed").first?.int(0) == 0)
        try store.begin()
        #expect(try store.indexAuditAliases(limit: 100) == 0)
        try store.commit()
        let found = try store.auditEvents(AuditQuery(aliasReference: references[0])).events
        #expect(found.count == 2)
    }

    /// One create queued straight on the executor: its record and alias (`tok_<name>`) through
    /// the batch's statement, then its answer from the outcome (`rest` nil), or `rest`, which
    /// also does it all when the job runs whole (no outcomes). Each notes its event.
    struct PlannedCreate {
        let name: String
        var rest: (@Sendable () throws -> Void)? = nil

        var write: NewRecordWrite {
            NewRecordWrite(
                record: AliasStoreCompatSuite.record("rec_\(name)"), alias: AliasStoreCompatSuite.alias("tok_\(name)"))
        }
        var reference: String { "ar_\(name)" }
    }

    /// Queues `plans` as one batch of audited creates (the executor held meanwhile); each
    /// result once all are answered.
    static func oneBatch(_ plans: [PlannedCreate], on vault: Vault, subject: Creator) throws
        -> [String: Result<String, any Error>]
    {
        let jobs = QueuedJobs()
        let hold = jobs.holdExecutor(of: vault)
        defer { hold.open() }
        #expect(hold.entered.wait(timeout: .now() + 10) == .success)
        let results = Mutex<[String: Result<String, any Error>]>([:])
        let done = DispatchGroup()
        for plan in plans {
            done.enter()
            let write = plan.write
            VaultAuditing.current.withValue(subject) {
                vault.executor.submit(
                    newRecords: [write], durable: false,
                    finish: { _ -> String? in
                        guard plan.rest == nil else { return nil }
                        VaultAuditing.note(plan.reference, .ok, .create)
                        return plan.name
                    },
                    { store, outcomes in
                        if outcomes == nil { _ = try store.insertNewRecords([write], durable: false) }
                        try plan.rest?()
                        VaultAuditing.note(plan.reference, .ok, .create)
                        return plan.name
                    },
                    completion: { result in
                        results.withLock { $0[plan.name] = result }
                        done.leave()
                    })
            }
        }
        hold.open()
        #expect(done.wait(timeout: .now() + 15) == .success)
        return results.withLock { $0 }
    }

    /// A create whose rest fails after the batch's statement wrote its record: the whole
    /// transaction runs again, each create whole in its savepoint. The failing one leaves
    /// neither record nor event; the others commit both. (Before, its record and alias
    /// committed without an event, its savepoint only covering the rest.)
    @Test func aCreateThatFailsAfterItsBatchedRecordLeavesNeitherRecordNorEvent() throws {
        let (vault, keys, url) = try Self.auditingVault()
        defer { vault.close() }
        let inspector = try PostgreSQLAliasStore(url: url)
        let subject = Creator()
        let failing = PlannedCreate(name: "b") { throw VaultError.unavailable("the rest failed") }
        let results = try Self.oneBatch(
            [PlannedCreate(name: "a"), failing, PlannedCreate(name: "c")], on: vault, subject: subject)

        #expect(try results["a"]?.get() == "a" && results["c"]?.get() == "c")
        #expect(throws: VaultError.self) { try results["b"]?.get() }
        #expect(try inspector.record(alias: "tok_a") != nil && inspector.record(alias: "tok_c") != nil)
        #expect(try inspector.record(alias: "tok_b") == nil)
        #expect(try inspector.recordCount() == 2)
        let stored = try inspector.auditEvents(AuditQuery(action: "create", limit: 100)).events
        #expect(Set(stored.compactMap(\.draft.aliasReference)) == ["ar_a", "ar_c"])
        #expect(try Vault.verifyAudit(inspector, keys: keys).events == 2)
    }

    /// A create whose turn comes past its deadline, its record already written by the batch's
    /// statement, still runs: its answer is the deadline's 503 ("values may have been stored"),
    /// and its event commits with its record. (Before, it was skipped, and its record committed
    /// without an event.)
    @Test func aCreatePastItsDeadlineAfterItsBatchedRecordStillCommitsItsEvent() throws {
        let (vault, keys, url) = try Self.auditingVault(storeTimeoutMilliseconds: 2_000)
        defer { vault.close() }
        let inspector = try PostgreSQLAliasStore(url: url)
        let subject = Creator()
        // The first create's rest outlasts the limit: the second's turn comes after it. (The
        // limit is long enough that the batch always starts within it on a loaded machine:
        // a job already past it when its batch starts is never written, and this tests nothing.)
        let slow = PlannedCreate(name: "slow") { usleep(2_300_000) }
        let results = try Self.oneBatch([slow, PlannedCreate(name: "late")], on: vault, subject: subject)

        #expect(throws: StoreError.self) { try results["late"]?.get() }
        // The deadline answered first; the batch commits once the slow rest is done.
        #expect(Poll.until(seconds: 10) { (try? inspector.recordCount()) == 2 })
        #expect(try inspector.record(alias: "tok_late") != nil)
        let stored = try inspector.auditEvents(AuditQuery(action: "create", limit: 100)).events
        #expect(Set(stored.compactMap(\.draft.aliasReference)) == ["ar_slow", "ar_late"])
        #expect(try Vault.verifyAudit(inspector, keys: keys).events == 2)
    }
}
