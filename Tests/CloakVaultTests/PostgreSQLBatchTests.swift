import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// New records in one round trip (``PostgreSQLAliasStore/commitNewRecords(_:durable:)``) against
/// a real server: the races and failures a one-statement commit has to come through, and the
/// vault's path for what a batch leaves undone.
@Suite(
    .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
    .tags(.postgres))
struct PostgreSQLBatchTests {
    typealias Suite = AliasStoreCompatSuite

    @Test func aBatchWaitsForAnotherNodesUncommittedValueAndSkipsIt() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let a = try PostgreSQLAliasStore(url: url), b = Unchecked(try PostgreSQLAliasStore(url: url))
        try a.begin()
        try a.insert(Suite.record("rec_a", fingerprint: Suite.fingerprint(3), aliases: [Suite.alias("tok_a")]))
        let outcomes = Mutex<Result<[NewRecordOutcome], StoreError>?>(nil)
        Thread {
            let result = Result { () throws(StoreError) in
                try b.value.commitNewRecords(
                    [
                        NewRecordWrite(
                            record: Suite.record("rec_b", fingerprint: Suite.fingerprint(3)),
                            alias: Suite.alias("tok_b")),
                        NewRecordWrite(record: Suite.record("rec_c"), alias: Suite.alias("tok_c")),
                    ], durable: false)
            }
            outcomes.withLock { $0 = result }
        }.start()
        // b's batch waits on a's row (the same fingerprint), whatever the order of the threads.
        #expect(Poll.until { (try? Self.waitingOnALock(url)) == true })
        #expect(outcomes.withLock { $0 } == nil)
        try a.commit()
        #expect(Poll.until { outcomes.withLock { $0 } != nil })
        #expect(try outcomes.withLock { $0 }?.get() == [.notStored, .stored])
        #expect(try a.record(fingerprint: Suite.fingerprint(3))?.id == "rec_a")
        #expect(try a.record(alias: "tok_c")?.id == "rec_c")
        #expect(try a.recordCount() == 2)
    }

    @Test func aBatchThatFailsCommitsNothingAndTheConnectionGoesOn() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let store = try PostgreSQLAliasStore(url: url)
        let good = NewRecordWrite(record: Suite.record("rec_good"), alias: Suite.alias("tok_good"))
        // PostgreSQL's text holds no NUL: the statement fails after the good write was sent.
        let bad = NewRecordWrite(record: Suite.record("rec_bad"), alias: Suite.alias("tok_\u{0}bad"))
        #expect(throws: StoreError.self) { try store.commitNewRecords([good, bad], durable: true) }
        #expect(!store.isInTransaction)
        #expect(try store.recordCount() == 0)
        #expect(try store.commitNewRecords([good], durable: false) == [.stored])
        #expect(try store.record(alias: "tok_good")?.id == "rec_good")
    }

    @Test func aDeadlockWithABatchIsTransientAndTheBatchWritesAllOrNothing() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let a = try PostgreSQLAliasStore(url: url), b = Unchecked(try PostgreSQLAliasStore(url: url))
        let x = Suite.fingerprint(1), y = Suite.fingerprint(2)
        try a.begin()
        try a.insert(Suite.record("a_y", fingerprint: y, aliases: [Suite.alias("tok_a_y")]))
        let batch = Mutex<Result<[NewRecordOutcome], StoreError>?>(nil)
        Thread {
            // x first (fingerprint order), then waits for a's y.
            let result = Result { () throws(StoreError) in
                try b.value.commitNewRecords(
                    [
                        NewRecordWrite(record: Suite.record("b_y", fingerprint: y), alias: Suite.alias("tok_b_y")),
                        NewRecordWrite(record: Suite.record("b_x", fingerprint: x), alias: Suite.alias("tok_b_x")),
                    ], durable: false)
            }
            batch.withLock { $0 = result }
        }.start()
        #expect(Poll.until { (try? Self.waitingOnALock(url)) == true })
        // a now waits for b's x: PostgreSQL fails one of the two.
        var aError: StoreError?
        do throws(StoreError) {
            try a.insert(Suite.record("a_x", fingerprint: x, aliases: [Suite.alias("tok_a_x")]))
            try a.commit()
        } catch {
            aError = error
            a.rollback()
        }
        #expect(Poll.until { batch.withLock { $0 } != nil })
        let outcome = try #require(batch.withLock { $0 })
        switch (outcome, aError) {
        case (.failure(.transient), nil):
            // The batch lost: none of it is stored, and a's two records are.
            #expect(try a.record(fingerprint: x)?.id == "a_x")
            #expect(try a.record(alias: "tok_b_x") == nil)
        case let (.success(outcomes), .transient?):
            #expect(outcomes == [.stored, .stored])
            #expect(try a.record(fingerprint: x)?.id == "b_x")
            #expect(try a.record(fingerprint: y)?.id == "b_y")
        default:
            Issue.record("expected one transient failure: batch \(outcome), a \(String(describing: aError))")
        }
        #expect(!b.value.isInTransaction)
    }

    /// Reads run without a transaction (one round trip each): the connection itself refuses a
    /// write until the reading batch ends, and writes as usual afterwards.
    @Test func aReadingBatchRefusesAWrite() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let store = try PostgreSQLAliasStore(url: url)
        try store.beginReading()
        #expect(store.isInTransaction)
        #expect(throws: StoreError.self) { try store.insert(Suite.record("rec_a", aliases: [Suite.alias("tok_a")])) }
        #expect(throws: StoreError.self) {
            try store.commitNewRecords(
                [NewRecordWrite(record: Suite.record("rec_b"), alias: Suite.alias("tok_b"))], durable: false)
        }
        #expect(try store.record(alias: "tok_a") == nil)
        try store.commit()
        #expect(!store.isInTransaction)
        #expect(
            try store.commitNewRecords(
                [NewRecordWrite(record: Suite.record("rec_b"), alias: Suite.alias("tok_b"))], durable: false) == [
                    .stored
                ])
        #expect(try store.recordCount() == 1)
    }

    /// The first candidate of an FF1 alias is taken by another record: the batch stores the value
    /// without it, and the vault issues the next candidate in the same request.
    @Test func aTakenFirstCandidateGetsTheNextOneInTheSameRequest() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let vault = try Vault(
            store: PostgreSQLAliasStore(url: url), keys: .generate(), settings: .init(volatileTTLSeconds: 60))
        defer { vault.close() }
        let card = "4111111111111111"
        let first = try vault.alias(card, .FPE_SIX_T_FOUR)
        try vault.deleteSync(first).get()
        let other = try PostgreSQLAliasStore(url: url)
        try other.begin()
        try other.insert(Suite.record("rec_squat", aliases: [Suite.alias(first, .FPE_SIX_T_FOUR)]))
        try other.commit()
        let second = try vault.alias(card, .FPE_SIX_T_FOUR)
        #expect(second != first)
        #expect(try vault.revealOne(second)?.value == card)
        #expect(try other.recordCount() == 2)
        // And it is the value's alias from now on.
        #expect(try vault.alias(card, .FPE_SIX_T_FOUR) == second)
    }

    /// Requests for one value that meet in one batch: one is stored, the others read it.
    @Test func oneValueAliasedManyTimesAtOnceGetsOneAlias() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let vault = try Vault(
            store: PostgreSQLAliasStore(url: url), keys: .generate(), settings: .init(volatileTTLSeconds: 60))
        defer { vault.close() }
        let aliases = Mutex<[String: Set<String>]>([:])
        DispatchQueue.concurrentPerform(iterations: 48) { i in
            let value = i.isMultiple(of: 2) ? "same-value" : "value-\(i)"
            let alias = try? vault.alias(value, .UUID)
            aliases.withLock { _ = $0[value, default: []].insert(alias ?? "failed") }
        }
        let seen = aliases.withLock { $0 }
        #expect(seen.count == 25)
        for (value, set) in seen { #expect(set.count == 1 && !set.contains("failed"), "\(value): \(set)") }
        #expect(try PostgreSQLAliasStore(url: url).recordCount() == 25)
    }

    /// Whether a session of the database waits on a lock (another's uncommitted row).
    static func waitingOnALock(_ url: String) throws -> Bool {
        let probe = try PostgreSQLConnection(url: url)
        let rows = try probe.query(
            "SELECT count(*)::int8 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return (rows.first?.int(0) ?? 0) > 0
    }
}
