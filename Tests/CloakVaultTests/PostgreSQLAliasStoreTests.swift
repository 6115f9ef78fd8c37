import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// The PostgreSQL store against a real server: the cluster `scripts/test` starts
/// (`CLOAK_TEST_POSTGRES_URL`), a fresh database per test.
@Suite(
    .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
    .tags(.postgres))
struct PostgreSQLAliasStoreTests {
    @Test(arguments: AliasStoreCompatSuite.Case.allCases)
    func postgresStoreMeetsTheContract(_ c: AliasStoreCompatSuite.Case) throws {
        let url = try PostgresTestCluster.freshDatabase()
        try AliasStoreCompatSuite(makeStore: { try PostgreSQLAliasStore(url: url) }).run(c)
    }

    /// Another node may delete behind this one: a vault on a shared store keeps no dedupe cache,
    /// whatever its settings ask (the store says it is not the only writer).
    @Test func aVaultOnASharedStoreNeverRemembers() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let vault = try Vault(
            store: PostgreSQLAliasStore(url: url), keys: .generate(),
            settings: .init(volatileTTLSeconds: 60, dedupeCacheEntries: 100))
        #expect(vault.cache == nil)
        #expect(try SQLiteAliasStore(path: ":memory:").isSoleWriter)
        // An in-memory database leaves no file named after it in the working folder.
        #expect(!FileManager.default.fileExists(atPath: ":memory:"))
    }

    /// A store's session keeps each statement's generic plan, builds no Memoize tables and
    /// compiles nothing with JIT: a page of an export over tables not yet analysed (just filled
    /// by an import) was costed past jit_above_cost, and each page then spent 70 to 300 ms of
    /// the server's CPU compiling a read of 2 ms. A URL cannot turn these back (its `options`
    /// are refused, ``PostgresURLTests``).
    @Test func aStoreSessionPlansOnceAndCompilesNothing() throws {
        let store = try PostgreSQLAliasStore(url: PostgresTestCluster.freshDatabase())
        let row = try #require(
            try store.db.query(
                "SELECT current_setting('jit'), current_setting('plan_cache_mode'), current_setting('enable_memoize')"
            ).first)
        #expect(row.text(0) == "off")
        #expect(row.text(1) == "force_generic_plan")
        #expect(row.text(2) == "off")
    }

    /// Schema 2 makes record ids and aliases compare bytewise; a database at schema 1 with records
    /// is upgraded in place and keeps them.
    @Test func aVersionOneDatabaseIsUpgradedToBytewiseIds() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let raw = try PostgreSQLConnection(url: url)
        try raw.execute(
            "CREATE TABLE cloak_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        try raw.execute(PostgreSQLAliasStore.migrations[0])
        try raw.execute("INSERT INTO cloak_schema (version) VALUES (1)")
        let store = try PostgreSQLAliasStore(url: url)  // version 1 → 2 here
        try store.begin()
        try store.insert(
            AliasStoreCompatSuite.record(
                "rec_b", fingerprint: AliasStoreCompatSuite.fingerprint(1),
                aliases: [AliasStoreCompatSuite.alias("tok_b")]))
        try store.insert(
            AliasStoreCompatSuite.record(
                "rec_B", fingerprint: AliasStoreCompatSuite.fingerprint(2),
                aliases: [AliasStoreCompatSuite.alias("tok_B")]))
        try store.commit()
        for (table, column) in [("records", "id"), ("aliases", "record_id"), ("aliases", "alias")] {
            let collation = try raw.query(
                "SELECT collation_name FROM information_schema.columns WHERE table_name = $1 AND column_name = $2",
                [.text(table), .text(column)]
            ).first?.text(0)
            #expect(collation == "C", "\(table).\(column): \(collation ?? "default")")
        }
        #expect(
            try raw.query("SELECT max(version)::int8 FROM cloak_schema").first?.int(0)
                == Int64(PostgreSQLAliasStore.migrations.count))
        // Bytewise: "rec_B" (0x42) before "rec_b" (0x62), as the ids' time prefix needs.
        #expect(try store.records(after: nil, limit: 10).map(\.id) == ["rec_B", "rec_b"])
        #expect(try store.record(alias: "tok_b")?.id == "rec_b")
    }

    @Test func twoNodesStartingTogetherMigrateOnce() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let opened = Mutex<[Result<Void, StoreError>]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let result = Result { () throws(StoreError) in _ = try PostgreSQLAliasStore(url: url) }
            opened.withLock { $0.append(result) }
        }
        let results = opened.withLock { $0 }
        #expect(results.count == 4)
        for result in results { #expect((try? result.get()) != nil, "\(result)") }
    }

    @Test func aValueStoredByAnotherNodeFirstIsReadNotDuplicated() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let a = try PostgreSQLAliasStore(url: url), b = Unchecked(try PostgreSQLAliasStore(url: url))
        let fingerprint = AliasStoreCompatSuite.fingerprint(7)
        try a.begin()
        try a.insert(
            AliasStoreCompatSuite.record(
                "rec_a", fingerprint: fingerprint, aliases: [AliasStoreCompatSuite.alias("tok_a")]))
        try b.value.begin()
        // b's insert waits for a's transaction, then loses to it.
        let raced = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do throws(StoreError) {
                try b.value.insert(
                    AliasStoreCompatSuite.record(
                        "rec_b", fingerprint: fingerprint, aliases: [AliasStoreCompatSuite.alias("tok_b")]))
            } catch { raced.withLock { $0 = error } }
            done.signal()
        }.start()
        try a.commit()
        done.wait()
        #expect(raced.withLock { $0 } == .fingerprintTaken)
        // b's transaction goes on (the lost insert was its own savepoint) and sees a's record.
        #expect(try b.value.record(fingerprint: fingerprint)?.id == "rec_a")
        try b.value.commit()
    }

    @Test func aDeadlockBetweenWritersIsTransientForOneOfThem() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let a = Unchecked(try PostgreSQLAliasStore(url: url)), b = try PostgreSQLAliasStore(url: url)
        let x = AliasStoreCompatSuite.fingerprint(1), y = AliasStoreCompatSuite.fingerprint(2)
        try a.value.begin()
        try a.value.insert(
            AliasStoreCompatSuite.record("a_x", fingerprint: x, aliases: [AliasStoreCompatSuite.alias("tok_a_x")]))
        try b.begin()
        try b.insert(
            AliasStoreCompatSuite.record("b_y", fingerprint: y, aliases: [AliasStoreCompatSuite.alias("tok_b_y")]))
        // a waits for b's y while b waits for a's x: PostgreSQL breaks it by failing one of them.
        let aError = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do throws(StoreError) {
                try a.value.insert(
                    AliasStoreCompatSuite.record(
                        "a_y", fingerprint: y, aliases: [AliasStoreCompatSuite.alias("tok_a_y")]))
            } catch { aError.withLock { $0 = error } }
            done.signal()
        }.start()
        usleep(200_000)
        var bError: StoreError?
        do throws(StoreError) {
            try b.insert(
                AliasStoreCompatSuite.record("b_x", fingerprint: x, aliases: [AliasStoreCompatSuite.alias("tok_b_x")]))
        } catch { bError = error }
        if bError != nil { b.rollback() }  // lets a go on
        done.wait()
        let errors = [aError.withLock { $0 }, bError].compactMap { $0 }
        #expect(
            errors.contains {
                if case .transient = $0 { return true }; return false
            }, "\(errors)")
        a.value.rollback()
        b.rollback()
    }

    @Test func anAliasIssuedByAnotherNodeIsTaken() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let a = try PostgreSQLAliasStore(url: url), b = try PostgreSQLAliasStore(url: url)
        try a.begin()
        try a.insert(
            AliasStoreCompatSuite.record("rec_a", fingerprint: nil, aliases: [AliasStoreCompatSuite.alias("tok_same")]))
        try a.commit()
        try b.begin()
        #expect(throws: StoreError.aliasTaken) {
            try b.insert(
                AliasStoreCompatSuite.record(
                    "rec_b", fingerprint: nil, aliases: [AliasStoreCompatSuite.alias("tok_same")]))
        }
        try b.insert(
            AliasStoreCompatSuite.record("rec_c", fingerprint: nil, aliases: [AliasStoreCompatSuite.alias("tok_other")])
        )
        try b.commit()
        #expect(try a.record(alias: "tok_other")?.id == "rec_c")
    }

    @Test func theExpirySweepIsSafeOnEveryNodeAtOnce() throws {
        let url = try PostgresTestCluster.freshDatabase()
        let writer = try PostgreSQLAliasStore(url: url)
        try writer.begin()
        for i in 0..<200 {
            var r = AliasStoreCompatSuite.record(
                "rec_\(i)", fingerprint: nil, aliases: [AliasStoreCompatSuite.alias("tok_\(i)")])
            r.expiresAt = 100
            try writer.insert(r)
        }
        try writer.commit()
        let nodes = Unchecked(try (0..<4).map { _ in try PostgreSQLAliasStore(url: url) })
        let deleted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: nodes.value.count) { i in
            let node = nodes.value[i]
            var mine = 0
            while true {
                guard (try? node.begin()) != nil, let n = try? node.deleteExpired(now: 200, limit: 7),
                    (try? node.commit()) != nil
                else { node.rollback(); break }
                if n == 0 { break }
                mine += n
            }
            deleted.withLock { $0 += mine }
        }
        #expect(deleted.withLock { $0 } == 200)
        #expect(try writer.hasRecords() == false)
    }

    @Test func theURLsPasswordNeverReachesAnError() throws {
        let url = try #require(PostgresTestCluster.url)
        let wrong = url.replacingOccurrences(
            of: #"(postgres://[^:]+:)[^@]+@"#, with: "$1not-the-password-xyz@", options: .regularExpression)
        do {
            _ = try PostgreSQLAliasStore(url: wrong)
            Issue.record("a wrong password connected")
        } catch {
            #expect(!error.description.contains("not-the-password-xyz"), "\(error)")
            #expect(error.description.contains("***"))
        }
        #expect(
            StoreURL.redacted("postgres://u:s3cret@h:5432/db?sslmode=require")
                == "postgres://u:***@h:5432/db?sslmode=require")
        #expect(StoreURL.redacted("postgres://h/db?password=s3cret&x=1") == "postgres://h/db?password=***&x=1")
    }

    @Test func anUnreachableServerFailsAtOnceAndTheStoreReconnects() throws {
        // A server that is not there: the store fails fast, with the URL redacted.
        let start = Date()
        #expect(throws: StoreError.self) { try PostgreSQLAliasStore(url: "postgres://cloak:pw@127.0.0.1:1/cloak") }
        #expect(Date().timeIntervalSince(start) < 10)
    }
}

/// Hands a store to another thread in a test where only one thread uses it at a time.
final class Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Store URLs as logs and errors show them (no server needed).
@Suite struct StoreURLTests {
    /// Passwords with the characters that end other parts of a URL are hidden all the same
    /// (libpq reads the userinfo up to the first `@` before any `/`).
    @Test(arguments: [
        ("postgres://u:pa?ss@h/db", "postgres://u:***@h/db"),
        ("postgres://u:pa#ss@h:5432/db", "postgres://u:***@h:5432/db"),
        ("postgres://u:pa%40ss@h/db", "postgres://u:***@h/db"),
        ("postgres://u:p?x@h?sslmode=require", "postgres://u:***@h?sslmode=require"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ("postgres://u:s3cret@h/db?application_name=a@b", "postgres://u:***@h/db?application_name=a@b"),
    ])
    func passwordsWithURLDelimitersAreRedacted(url: String, shown: String) {
        #expect(StoreURL.redacted(url) == shown)
    }
}
