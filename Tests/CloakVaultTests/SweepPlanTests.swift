import CloakCore
import CloakTesting
import Foundation
import Testing

@testable import CloakVault

/// Issue 56 item 4: every statement that reaches rows by age or expiry goes through an index, on
/// both stores, so a sweep costs what it removes and not what the store holds; and so does each
/// lookup a sweep's delete cascades into. The plans are the stores' own answers (SQLite's
/// `EXPLAIN QUERY PLAN`, PostgreSQL's generic `EXPLAIN`).
@Suite struct SweepPlanTests {
    /// The indexes each SQLite statement may use. Unfinished uploads are the files without a
    /// record: SQLite may find them by `files_idle` or by the record's unique index (`record_id
    /// IS NULL`); either way it visits only uploads under way or abandoned, never finished files.
    static let sqliteIndexes = [
        "expired records": ["records_by_expiry"], "abandoned uploads": ["files_idle", "sqlite_autoindex_files_2"],
        "oldest intent": ["records_by_bucket"],
    ]

    /// The rows a record's delete cascades to, found by the record (or upload) they belong to.
    static let cascades = [
        ("aliases", "SELECT 1 FROM aliases WHERE record_id = ?1"),
        ("files", "SELECT 1 FROM files WHERE record_id = ?1"),
        ("file_chunks", "SELECT 1 FROM file_chunks WHERE upload_id = ?1"),
    ]

    @Test func sqliteSweepsGoThroughTheirIndexes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteAliasStore(path: directory.path + "/plans.db")
        for (name, sql) in SQLiteAliasStore.Sweeps.all {
            let plan = try store.queryPlan(sql)
            let indexes = try #require(Self.sqliteIndexes[name])
            #expect(
                plan.contains { line in line.hasPrefix("SEARCH") && indexes.contains { line.contains("INDEX \($0) ") }
                },
                "\(name): \(plan)")
            // A SCAN is a pass over a whole table (or a whole index): none is allowed.
            #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(name) scans: \(plan)")
        }
        for (table, sql) in Self.cascades {
            let plan = try store.queryPlan(sql)
            #expect(plan.contains { $0.hasPrefix("SEARCH \(table) USING") }, "\(table): \(plan)")
        }
    }

    /// Issue 59: what finds audit blocks (a search by time or by alias, a chain read for verify,
    /// the retention sweep, the alias index's upkeep) searches an index and scans nothing.
    @Test func sqliteAuditFindersGoThroughIndexes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteAliasStore(path: directory.path + "/plans.db")
        for (name, sql) in SQLiteAliasStore.auditFinders {
            let plan = try store.queryPlan(sql)
            #expect(plan.contains { $0.hasPrefix("SEARCH audit_blocks USING") }, "\(name): \(plan)")
            // (A SCAN of a subquery's few rows is not a pass over a table.)
            #expect(!plan.contains { $0.hasPrefix("SCAN audit") }, "\(name) scans: \(plan)")
        }
    }

    @Test(
        .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
        .tags(.postgres))
    func postgresSweepsGoThroughTheirIndexes() throws {
        let store = try PostgreSQLAliasStore(url: PostgresURL(parsing: PostgresTestCluster.freshDatabase()))
        // An empty table is cheaper to read whole: forbid that, so that the plan says whether
        // the statement can be served by an index at all (a Seq Scan then means it cannot).
        try store.db.execute("SET enable_seqscan = off")
        let statements: [(String, String, [PostgreSQLConnection.Value], String)] = [
            (
                "expired records", PostgreSQLAliasStore.Sweeps.expiredRecords, [.int(0), .int(1000)],
                "records_by_expiry"
            ),
            (
                "unaliased records", PostgreSQLAliasStore.Sweeps.unaliasedNotes, [.int(0), .int(1000)],
                "unaliased_by_time"
            ),
            ("abandoned uploads", PostgreSQLAliasStore.Sweeps.abandonedFiles, [.int(0), .int(10)], "files_idle"),
            ("oldest intent", PostgreSQLAliasStore.Sweeps.oldestIntent, [.bytes([1, 2, 3])], "records_by_bucket"),
        ]
        for (name, sql, parameters, index) in statements {
            let plan = try store.queryPlan(sql, parameters)
            // An index scan, an index-only scan or a bitmap built from the index.
            #expect(
                plan.contains { $0.contains("using \(index) ") || $0.contains("Bitmap Index Scan on \(index) ") },
                "\(name): \(plan)")
            #expect(!plan.contains { $0.contains("Seq Scan") }, "\(name) scans: \(plan)")
        }
        for (table, sql) in Self.cascades {
            let plan = try store.queryPlan(sql.replacingOccurrences(of: "?1", with: "$1"), [.text("x")])
            #expect(plan.contains { $0.contains("Index") && $0.contains("on \(table)") }, "\(table): \(plan)")
            #expect(!plan.contains { $0.contains("Seq Scan") }, "\(table) scans: \(plan)")
        }
    }

    /// The walk over every record (an export's count and its writing, a migration) pages along
    /// the primary key with the page's size known to the plan, on a table nobody has analysed
    /// yet: a store an import has just filled, before autovacuum comes by. With `LIMIT $n` the
    /// generic plan for 300,000 such records (``Benchmarks/import.sh``) was a parallel Seq Scan
    /// and a Sort of the whole table for each page of 500, and counting them took 42 s.
    @Test(
        .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
        .tags(.postgres))
    func postgresPagesFollowTheKeyBeforeAnyAnalyze() throws {
        let store = try PostgreSQLAliasStore(url: PostgresURL(parsing: PostgresTestCluster.freshDatabase()))
        // Nothing analyses the table behind the test's back (the cluster runs autovacuum).
        try store.db.execute("ALTER TABLE records SET (autovacuum_enabled = false)")
        try store.db.execute(
            """
            INSERT INTO records (id, fingerprint, key_id, nonce, ciphertext, tag, storage, classifiers, created_at)
            SELECT 'rec_' || lpad(i::text, 8, '0'), sha256(i::text::bytea), 'k1', '\\x00', '\\x00', '\\x00',
                'PERSISTENT', '', 0
            FROM generate_series(1, 20000) i
            """)
        // -1: no ANALYZE or VACUUM has counted the table's rows yet.
        let counted = try store.db.query("SELECT reltuples::int8 FROM pg_class WHERE relname = 'records'")
        try #require(counted.first?.int(0) == -1, "the table was analysed: the test proves nothing")
        // The plan this session keeps for the statement (generic: see PostgreSQLConnection).
        try store.db.execute("PREPARE walk (text) AS \(PostgreSQLAliasStore.recordsAfter(limit: 500))")
        let plan = try store.db.query("EXPLAIN EXECUTE walk ('')").compactMap { $0.text(0) }
        #expect(plan.contains { $0.contains("Limit") && $0.contains("rows=500 ") }, "\(plan)")
        #expect(plan.contains { $0.contains("Index Scan using records_pkey on records") }, "\(plan)")
        #expect(!plan.contains { $0.contains("Seq Scan on records") || $0.contains("Sort") }, "\(plan)")
    }
}

/// Issue 56 item 4: a node that served steady traffic for a week (on a clock the test moves:
/// nothing in a release build moves Cloak's clock) holds what a fresh one holds: expiring
/// records, intents and unfinished uploads leave on time, through the vault's own sweep.
@Suite struct SimulatedWeekTests {
    @Test func aWeekOfSteadyTrafficLeavesOnlyWhatIsLive() throws {
        let harness = VaultHarness()
        defer { harness.tearDown() }
        let vault = try harness.openVault()
        let inspector = try harness.inspector()
        var persistent = 0
        var liveAfterFirstHour: Int?
        for hour in 0..<(7 * 24) {
            // An hour's traffic: values kept for good, VOLATILE ones (60 s), ones with ttl_s of
            // half an hour, anonymous intents, and an upload its client never finished.
            var requests: [AliasRequest] = []
            for i in 0..<10 {
                requests.append(AliasRequest(value: "keep-\(hour)-\(i)", format: .UUID, storage: .persistent))
                requests.append(AliasRequest(value: "brief-\(hour)-\(i)", format: .UUID, storage: .volatile))
                var timed = AliasRequest(value: "timed-\(hour)-\(i)", format: .UUID, storage: .persistent)
                timed.ttlSeconds = 1_800
                requests.append(timed)
            }
            persistent += 10
            _ = try vault.createSync(requests).get()
            _ = try vault.createSync(
                (0..<5).map { AliasRequest(value: "intent-\(hour)-\($0)", format: .UUID, storage: .persistent) },
                caller: .anonymous
            ).get()
            let upload = try vault.newUpload()
            try VaultFilesTests.await { vault.startUpload(upload.started, chunks: [], completion: $0) }
            // Inside the hour, everything is there; then the hour passes and the sweep runs.
            harness.clock.advance(by: 3_600)
            Vault.sweep(inspector, now: harness.clock.now)
            let live = try inspector.recordCount()
            if hour == 0 { liveAfterFirstHour = live }
            // Intents live a day (auth.anonymous.intent_ttl_s): the last 23 hours' worth, then flat.
            let intents = min(hour + 1, 23) * 5
            #expect(live == persistent + intents, "hour \(hour)")
            #expect(try inspector.deleteAbandonedFiles(idleBefore: harness.clock.now + 1, limit: 10) <= 1)
        }
        // A week in, the store holds what is still live, as after the first hour plus the values
        // kept for good: nothing the sweep should have taken is waiting for a scan.
        #expect(liveAfterFirstHour == 15)
        #expect(try inspector.recordCount() == 7 * 24 * 10 + 23 * 5)
    }
}
