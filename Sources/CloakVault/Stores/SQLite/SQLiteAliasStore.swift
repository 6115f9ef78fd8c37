import CloakCore
import CloakCrypto
import Foundation

/// The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so a committed
/// record survives a crash of the process or the machine.
package final class SQLiteAliasStore: AliasStore {
    let db: SQLiteConnection
    /// The database file (nil in memory): its file system is asked whether it still takes writes.
    private let path: String?

    package var counters: StoreCounters { db.counters }

    /// Opens (creating when needed) the database at `path`, and its folder. `":memory:"` is
    /// SQLite's database in memory (tests): no file is made for it.
    package init(path: String) throws(StoreError) {
        if path != ":memory:" {
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try? FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            }
            // The database holds ciphertexts and fingerprints: readable by this user only. Made
            // here only when it is not there yet: closing a descriptor of a file drops every POSIX
            // lock this process holds on it, and another connection of this process (the audit
            // search's, a command's) may hold SQLite's locks on it right now.
            if !FileManager.default.fileExists(atPath: path) {
                let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if fd >= 0 { close(fd) }
            }
            chmod(path, 0o600)
        }
        self.path = path == ":memory:" ? nil : path
        db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA journal_mode=WAL")
        try db.execute("PRAGMA synchronous=FULL")
        try db.execute("PRAGMA foreign_keys=ON")
        try db.execute("PRAGMA cache_size=-16384")  // 16 MiB: hot index pages stay in memory
        try db.execute("PRAGMA wal_autocheckpoint=8192")  // checkpoint every 32 MiB of WAL, not every 4 MiB
        try db.execute("PRAGMA temp_store=MEMORY")
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS records (
                id TEXT PRIMARY KEY,
                fingerprint BLOB UNIQUE,
                key_id TEXT NOT NULL,
                nonce BLOB NOT NULL,
                ciphertext BLOB NOT NULL,
                tag BLOB NOT NULL,
                storage TEXT NOT NULL,
                classifiers TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                expires_at INTEGER
            );
            CREATE TABLE IF NOT EXISTS aliases (
                alias TEXT PRIMARY KEY,
                record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
                format TEXT NOT NULL,
                UNIQUE (record_id, format)
            );
            CREATE INDEX IF NOT EXISTS records_by_expiry ON records(expires_at) WHERE expires_at IS NOT NULL;
            CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
            """)
        // Aliases are signed (an HMAC binding alias, record and format) since schema 2.
        if try !db.columnExists(table: "aliases", column: "mac") {
            try db.execute("ALTER TABLE aliases ADD COLUMN mac BLOB")
        }
        // Anonymous callers' records are intents since schema 3.
        if try !db.columnExists(table: "records", column: "intent") {
            try db.execute("ALTER TABLE records ADD COLUMN intent INTEGER NOT NULL DEFAULT 0")
        }
        // Places taken by intents per small bucket (schema 4): given back by a trigger on every
        // delete, whichever path deletes (sweep, delete, a record's last alias).
        if try !db.columnExists(table: "records", column: "bucket") {
            try db.execute("ALTER TABLE records ADD COLUMN bucket BLOB")
        }
        // A token holder's metadata (schema 5), a JSON object of strings.
        if try !db.columnExists(table: "records", column: "metadata") {
            try db.execute("ALTER TABLE records ADD COLUMN metadata TEXT")
        }
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS bucket_intents (bucket BLOB PRIMARY KEY, count INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS key_audit (
                seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, line TEXT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS records_by_bucket ON records(bucket, expires_at) WHERE bucket IS NOT NULL;
            CREATE TRIGGER IF NOT EXISTS records_bucket_out AFTER DELETE ON records WHEN OLD.bucket IS NOT NULL BEGIN
                UPDATE bucket_intents SET count = count - 1 WHERE bucket = OLD.bucket;
                DELETE FROM bucket_intents WHERE bucket = OLD.bucket AND count <= 0;
            END;
            """)
        // Files (schema 6, issue 47): uploads and their sealed chunks.
        try db.execute(Self.filesSchema)
        // An upload is aged by the later of its start and its last chunk (schema 7, issue 55,
        // item 8); a row from before has 0 there, and is aged by its start as it was.
        if try !db.columnExists(table: "files", column: "updated_at") {
            try db.execute("ALTER TABLE files ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0")
        }
        try db.execute(
            """
            DROP INDEX IF EXISTS files_unfinished;
            CREATE INDEX IF NOT EXISTS files_idle ON files(max(updated_at, created_at)) WHERE record_id IS NULL;
            """)
        // Audit events (schema 8, issue 59).
        try db.execute(Self.auditSchema)
        // Bulk jobs (schema 9, issue 60).
        try db.execute(Self.jobsSchema)
        // Groups of values stored together (schema 10, issue 76).
        try db.execute(Self.groupsSchema)
    }

    /// The file belongs to this process.
    package var isSoleWriter: Bool { true }
    package var auditSegmentBase: String? { path }

    /// A statement here is a function call: batching saves nothing.
    package var batchesNewRecords: Bool { false }
    package func commitNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        try commitNewRecordsOneByOne(writes, durable: durable)
    }
    package func insertNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        let outcomes = try insertNewRecordsOneByOne(writes)
        if durable { try forceDurableCommit() }
        return outcomes
    }

    package func begin() throws(StoreError) { try db.run("BEGIN IMMEDIATE") }
    /// Deferred: the read lock at the first read, never the write lock (WAL: no wait for a writer).
    package func beginReading() throws(StoreError) { try db.run("BEGIN") }
    package func commit() throws(StoreError) { try db.run("COMMIT") }
    package func rollback() { try? db.run("ROLLBACK") }
    package func savepoint() throws(StoreError) { try db.run("SAVEPOINT request") }
    package func releaseSavepoint() throws(StoreError) { try db.run("RELEASE request") }
    package var isInTransaction: Bool { !db.isAutocommit }

    package func rollbackToSavepoint() {
        try? db.run("ROLLBACK TO request")
        try? db.run("RELEASE request")
    }

    /// Rewrites a counter beside the records: the commit then journals and syncs a page, as a
    /// commit that stored a record does.
    package func forceDurableCommit() throws(StoreError) {
        durableCommits &+= 1
        try setMetadata(Self.durableCommitName, withUnsafeBytes(of: durableCommits.bigEndian) { Array($0) })
    }

    static let durableCommitName = "durable_commit"
    private var durableCommits = UInt64.random(in: 0...UInt64.max)

    /// Answers, and takes writes: a database SQLite opened read-only (the file was not
    /// writable) or on a file system remounted read-only is not ready (issue 55, item 9), though
    /// it still reads.
    package func ping() throws(StoreError) {
        let s = try db.statement("SELECT count(*) FROM sqlite_master")
        _ = try s.step()
        s.finish()
        if db.isReadOnly { throw .unavailable("the SQLite database was opened read-only") }
        var fs = statvfs()
        if let path, statvfs(path, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 {
            throw .unavailable("the SQLite database's file system is read-only")
        }
    }

    // Statement texts are made once: the statement cache is keyed by them.
    private static let recordByFingerprint = "SELECT \(StoredRecord.columns) FROM records WHERE fingerprint = ?1"
    private static let recordByAlias =
        "SELECT \(StoredRecord.columns) FROM records WHERE id = (SELECT record_id FROM aliases WHERE alias = ?1)"
    static let recordByID = "SELECT \(StoredRecord.columns) FROM records WHERE id = ?1"
    private static let insertRecord =
        "INSERT INTO records (\(StoredRecord.columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"

    package func record(fingerprint: [UInt8]) throws(StoreError) -> StoredRecord? {
        let s = try db.statement(Self.recordByFingerprint)
        s.bind(1, fingerprint)
        return try readRecord(s)
    }

    package func record(alias: String) throws(StoreError) -> StoredRecord? {
        let s = try db.statement(Self.recordByAlias)
        s.bind(1, alias)
        return try readRecord(s)
    }

    package func records(aliases: [String]) throws(StoreError) -> [String: StoredRecord] {
        try recordsOneByOne(aliases: aliases)
    }

    func readRecord(_ s: Statement) throws(StoreError) -> StoredRecord? {
        guard try s.step() else { return nil }
        var record = try StoredRecord(row: s)
        s.finish()
        let a = try db.statement("SELECT alias, format, mac FROM aliases WHERE record_id = ?1 ORDER BY rowid")
        a.bind(1, record.id)
        while try a.step() {
            if let alias = IssuedAlias(row: a) { record.aliases.append(alias) }
        }
        return record
    }

    package func insert(_ record: StoredRecord) throws(StoreError) {
        let s = try db.statement(Self.insertRecord)
        s.bind(1, record.id)
        s.bind(2, record.fingerprint)
        s.bind(3, record.keyID)
        s.bind(4, record.sealed.nonce)
        s.bind(5, record.sealed.ciphertext)
        s.bind(6, record.sealed.tag)
        s.bind(7, record.storage.rawValue)
        s.bind(8, record.classifiers.joined(separator: ","))
        s.bind(9, record.createdAt)
        s.bind(10, record.expiresAt)
        s.bind(11, Int64(record.intent ? 1 : 0))
        s.bind(12, record.bucket)
        s.bind(13, RevealedRecord.encodeMetadata(record.metadata))
        try s.run()
        for alias in record.aliases { try addAlias(alias, toRecord: record.id) }
    }

    package func addAlias(_ alias: IssuedAlias, toRecord id: String) throws(StoreError) {
        let s = try db.statement("INSERT INTO aliases (alias, record_id, format, mac) VALUES (?1, ?2, ?3, ?4)")
        s.bind(1, alias.alias)
        s.bind(2, id)
        s.bind(3, alias.storedFormat)
        s.bind(4, alias.mac)
        try s.run()
    }

    package func deleteAlias(_ alias: String) throws(StoreError) -> Bool {
        let find = try db.statement("SELECT record_id FROM aliases WHERE alias = ?1")
        find.bind(1, alias)
        guard try find.step(), let recordID = find.text(0) else { return false }
        find.finish()
        let delete = try db.statement("DELETE FROM aliases WHERE alias = ?1")
        delete.bind(1, alias)
        try delete.run()
        let orphan = try db.statement(
            "DELETE FROM records WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM aliases WHERE record_id = ?1)")
        orphan.bind(1, recordID)
        try orphan.run()
        return true
    }

    package func setRecordMetadata(_ metadata: [String: String], recordID: String) throws(StoreError) {
        let s = try db.statement("UPDATE records SET metadata = ?1 WHERE id = ?2")
        s.bind(1, RevealedRecord.encodeMetadata(metadata))
        s.bind(2, recordID)
        try s.run()
    }

    package func setExpiry(_ expiresAt: Int64?, recordID: String) throws(StoreError) {
        let s = try db.statement("UPDATE records SET expires_at = ?1 WHERE id = ?2")
        s.bind(1, expiresAt)
        s.bind(2, recordID)
        try s.run()
    }

    package func setClassifiers(_ classifiers: [String], recordID: String) throws(StoreError) {
        let s = try db.statement("UPDATE records SET classifiers = ?1 WHERE id = ?2")
        s.bind(1, classifiers.joined(separator: ","))
        s.bind(2, recordID)
        try s.run()
    }

    package func deleteExpired(now: Int64, limit: Int) throws(StoreError) -> Int {
        let s = try db.statement(Sweeps.expiredRecords)
        s.bind(1, now)
        s.bind(2, Int64(limit))
        try s.run()
        return db.changes
    }

    package func reserveBucketSlot(_ bucket: [UInt8], limit: Int) throws(StoreError) -> Bool {
        let s = try db.statement(
            """
            INSERT INTO bucket_intents (bucket, count) VALUES (?1, 1)
            ON CONFLICT(bucket) DO UPDATE SET count = count + 1 WHERE count < ?2
            """)
        s.bind(1, bucket)
        s.bind(2, Int64(limit))
        try s.run()
        // A row inserted or counted (not `RETURNING`: its rows go through a table of their own).
        return db.changes > 0
    }
}
