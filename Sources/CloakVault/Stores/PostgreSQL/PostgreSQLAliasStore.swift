import CloakCore
import CloakCrypto
import Foundation

/// The shared store: PostgreSQL through libpq, for several Cloak nodes on one (replicated)
/// database. Each executor batch is one PostgreSQL transaction; each request a savepoint.
///
/// - Races between nodes are decided by unique constraints: an alias issued elsewhere is
///   ``StoreError/aliasTaken`` (the vault tries its next candidate); a value or alias format
///   stored elsewhere first is ``StoreError/fingerprintTaken`` (the vault reads the record again
///   and uses it). Inserts say `ON CONFLICT DO NOTHING`, so a lost race is no error: it never
///   aborts the batch and never puts a key value into the server's log.
/// - The schema is versioned (`cloak_schema`) and migrated at open under a transaction-scoped
///   advisory lock, so nodes starting together do not race.
/// - While the server is unreachable every call fails at once with `unavailable` (503 upstream
///   of here); the connection is re-made on use with a backoff from 0.25 s to 5 s.
public final class PostgreSQLAliasStore: AliasStore {
    private let db: PostgreSQLConnection
    private var backoff: TimeInterval = 0.25
    private var nextReconnect = Date.distantPast
    /// The advisory lock key of migrations ("cloak" in ASCII).
    static let migrationLock: Int64 = 0x636C6F616B
    /// Schema versions, applied in order.
    static let migrations: [String] = [
        """
        CREATE TABLE records (
            id text PRIMARY KEY,
            fingerprint bytea,
            key_id text NOT NULL,
            nonce bytea NOT NULL,
            ciphertext bytea NOT NULL,
            tag bytea NOT NULL,
            storage text NOT NULL,
            classifiers text NOT NULL,
            created_at bigint NOT NULL,
            expires_at bigint,
            CONSTRAINT records_fingerprint_key UNIQUE (fingerprint)
        );
        CREATE TABLE aliases (
            seq bigserial NOT NULL,
            alias text PRIMARY KEY,
            record_id text NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            format text NOT NULL,
            mac bytea,
            CONSTRAINT aliases_record_format_key UNIQUE (record_id, format)
        );
        CREATE INDEX records_by_expiry ON records (expires_at) WHERE expires_at IS NOT NULL;
        CREATE TABLE meta (name text PRIMARY KEY, value bytea NOT NULL);
        """,
        // Record ids and aliases compare byte by byte, whatever the database's locale: ids start
        // with their creation time, so index inserts append and `records(after:)` pages along the
        // primary key (under a locale such as en_US.utf8 it had to sort the whole table per page,
        // and every comparison went through strcoll).
        """
        ALTER TABLE aliases ALTER COLUMN record_id TYPE text COLLATE "C";
        ALTER TABLE records ALTER COLUMN id TYPE text COLLATE "C";
        ALTER TABLE aliases ALTER COLUMN alias TYPE text COLLATE "C";
        """,
        // Anonymous callers' records are intents: short-lived until a backend keeps them.
        """
        ALTER TABLE records ADD COLUMN intent smallint NOT NULL DEFAULT 0;
        """,
        // Places taken by intents per small bucket, given back by a trigger on every delete.
        """
        ALTER TABLE records ADD COLUMN bucket bytea;
        CREATE INDEX records_by_bucket ON records (bucket, expires_at) WHERE bucket IS NOT NULL;
        CREATE TABLE bucket_intents (bucket bytea PRIMARY KEY, count integer NOT NULL);
        CREATE FUNCTION cloak_bucket_out() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE bucket_intents SET count = count - 1 WHERE bucket = OLD.bucket;
            DELETE FROM bucket_intents WHERE bucket = OLD.bucket AND count <= 0;
            RETURN NULL;
        END
        $$;
        CREATE TRIGGER records_bucket_out AFTER DELETE ON records FOR EACH ROW
            WHEN (OLD.bucket IS NOT NULL) EXECUTE FUNCTION cloak_bucket_out();
        """,
        // A token holder's metadata, a JSON object of strings.
        """
        ALTER TABLE records ADD COLUMN metadata text;
        """,
    ]

    /// Connects to `url` (`postgres://user:password@host:port/db?sslmode=…`, read by
    /// ``PostgresURL``: a URL it refuses is `unavailable` with a message that quotes none of it)
    /// and migrates the schema.
    public init(url: String) throws(StoreError) {
        db = try PostgreSQLConnection(url: url)
        try migrate()
    }

    /// Connects with the parts of a parsed URL (libpq never sees the URL's text) and migrates the schema.
    public init(url: PostgresURL) throws(StoreError) {
        db = try PostgreSQLConnection(url: url)
        try migrate()
    }

    private func migrate() throws(StoreError) {
        try db.execute("BEGIN")
        do throws(StoreError) {
            try db.query("SELECT pg_advisory_xact_lock($1)", [.int(Self.migrationLock)])
            try db.execute("CREATE TABLE IF NOT EXISTS cloak_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            let current = try db.query("SELECT coalesce(max(version), 0)::int8 FROM cloak_schema").first?.int(0) ?? 0
            guard current <= Int64(Self.migrations.count) else {
                throw StoreError.unavailable("the database's schema (version \(current)) is newer than this Cloak knows (\(Self.migrations.count))")
            }
            for (index, sql) in Self.migrations.enumerated() where Int64(index + 1) > current {
                try db.execute(sql)
                try db.query("INSERT INTO cloak_schema (version) VALUES ($1::int8::int)", [.int(Int64(index + 1))])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// Makes sure there is a connection: reconnects when it was lost, at most once per backoff step.
    private func connected() throws(StoreError) {
        if db.isConnected { return }
        guard Date() >= nextReconnect else { throw .unavailable("PostgreSQL is unreachable; reconnecting") }
        if db.reconnect() {
            backoff = 0.25
            return
        }
        nextReconnect = Date().addingTimeInterval(backoff)
        backoff = min(backoff * 2, 5)
        throw .unavailable("PostgreSQL is unreachable; reconnecting")
    }

    /// Other nodes write to the same server.
    public var isSoleWriter: Bool { false }

    public func begin() throws(StoreError) {
        try connected()
        try db.execute("BEGIN")
    }
    public func commit() throws(StoreError) { try db.execute("COMMIT") }
    public func rollback() { if db.isConnected { try? db.execute("ROLLBACK") } }
    public func savepoint() throws(StoreError) { try db.execute("SAVEPOINT request") }
    public func releaseSavepoint() throws(StoreError) { try db.execute("RELEASE SAVEPOINT request") }
    public var isInTransaction: Bool { db.isInTransaction }

    public func rollbackToSavepoint() {
        try? db.execute("ROLLBACK TO SAVEPOINT request")
        try? db.execute("RELEASE SAVEPOINT request")
    }

    /// Gives the transaction an id: its commit then writes a commit record and waits for the WAL
    /// flush, as a commit that stored a record does (no row is written, so nodes do not queue on
    /// one another).
    public func forceDurableCommit() throws(StoreError) {
        try db.query("SELECT txid_current()")
    }

    public func ping() throws(StoreError) {
        try connected()
        try db.query("SELECT 1")
    }

    // Query texts are made once: they are sent and looked up (prepared statements) every time.
    private static let recordByFingerprint = "SELECT \(StoredRecord.columns) FROM records WHERE fingerprint = $1"
    private static let recordByAlias =
        "SELECT \(StoredRecord.columns) FROM records WHERE id = (SELECT record_id FROM aliases WHERE alias = $1)"
    private static let recordByID = "SELECT \(StoredRecord.columns) FROM records WHERE id = $1"
    private static let insertRecord = """
        INSERT INTO records (\(StoredRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
        ON CONFLICT DO NOTHING RETURNING 1
        """

    public func record(fingerprint: [UInt8]) throws(StoreError) -> StoredRecord? {
        try readRecord(db.query(Self.recordByFingerprint, [.bytes(fingerprint)]))
    }

    public func record(alias: String) throws(StoreError) -> StoredRecord? {
        try readRecord(db.query(Self.recordByAlias, [.text(alias)]))
    }

    private func readRecord(_ rows: [PostgreSQLConnection.Row]) throws(StoreError) -> StoredRecord? {
        guard let s = rows.first else { return nil }
        var record = try StoredRecord(row: s)
        for row in try db.query("SELECT alias, format, mac FROM aliases WHERE record_id = $1 ORDER BY seq", [.text(record.id)]) {
            if let alias = IssuedAlias(row: row) { record.aliases.append(alias) }
        }
        return record
    }

    /// Inserts with `ON CONFLICT DO NOTHING`: a lost race raises no error, so it neither aborts
    /// the transaction nor writes the conflicting key (an alias, a fingerprint) into the server's
    /// log; which constraint won is then read back.
    public func insert(_ record: StoredRecord) throws(StoreError) {
        let inserted = try db.query(Self.insertRecord, [
            .text(record.id), record.fingerprint.map { .bytes($0) } ?? .null, .text(record.keyID), .bytes(record.sealed.nonce),
            .bytes(record.sealed.ciphertext), .bytes(record.sealed.tag), .text(record.storage.rawValue),
            .text(record.classifiers.joined(separator: ",")), .int(record.createdAt), record.expiresAt.map { .int($0) } ?? .null,
            .int(record.intent ? 1 : 0), record.bucket.map { .bytes($0) } ?? .null,
            RevealedRecord.encodeMetadata(record.metadata).map { .text($0) } ?? .null,
        ])
        if inserted.isEmpty {
            if let fingerprint = record.fingerprint,
                try !db.query("SELECT 1 FROM records WHERE fingerprint = $1", [.bytes(fingerprint)]).isEmpty
            {
                throw .fingerprintTaken
            }
            throw .unavailable("a record with this id exists")
        }
        for alias in record.aliases { try addAlias(alias, toRecord: record.id) }
    }

    public func addAlias(_ alias: IssuedAlias, toRecord id: String) throws(StoreError) {
        let inserted = try db.query("""
            INSERT INTO aliases (alias, record_id, format, mac) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(alias.alias), .text(id), .text(alias.storedFormat), .bytes(alias.mac)])
        guard inserted.isEmpty else { return }
        // The alias is another record's (try the next candidate), or this record got an alias in
        // this format from another writer meanwhile (read it).
        if try !db.query("SELECT 1 FROM aliases WHERE alias = $1", [.text(alias.alias)]).isEmpty { throw .aliasTaken }
        throw .fingerprintTaken
    }

    public func deleteAlias(_ alias: String) throws(StoreError) -> Bool {
        guard let recordID = try db.query("DELETE FROM aliases WHERE alias = $1 RETURNING record_id", [.text(alias)]).first?.text(0)
        else { return false }
        try db.query("DELETE FROM records WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM aliases WHERE record_id = $1)", [.text(recordID)])
        return true
    }

    public func setRecordMetadata(_ metadata: [String: String], recordID: String) throws(StoreError) {
        try db.query("UPDATE records SET metadata = $1 WHERE id = $2",
                     [RevealedRecord.encodeMetadata(metadata).map { .text($0) } ?? .null, .text(recordID)])
    }

    public func setExpiry(_ expiresAt: Int64?, recordID: String) throws(StoreError) {
        try db.query("UPDATE records SET expires_at = $1 WHERE id = $2", [expiresAt.map { .int($0) } ?? .null, .text(recordID)])
    }

    public func setClassifiers(_ classifiers: [String], recordID: String) throws(StoreError) {
        try db.query("UPDATE records SET classifiers = $1 WHERE id = $2", [.text(classifiers.joined(separator: ",")), .text(recordID)])
    }

    /// `ON CONFLICT DO UPDATE … WHERE` locks the bucket's row: concurrent nodes take places one
    /// after another, each seeing the count the one before left.
    public func reserveBucketSlot(_ bucket: [UInt8], limit: Int) throws(StoreError) -> Bool {
        try !db.query("""
            INSERT INTO bucket_intents (bucket, count) VALUES ($1, 1)
            ON CONFLICT (bucket) DO UPDATE SET count = bucket_intents.count + 1 WHERE bucket_intents.count < $2 RETURNING 1
            """, [.bytes(bucket), .int(Int64(limit))]).isEmpty
    }

    public func oldestIntentExpiry(bucket: [UInt8]) throws(StoreError) -> Int64? {
        try db.query("SELECT min(expires_at) FROM records WHERE bucket = $1", [.bytes(bucket)]).first?.int(0)
    }

    /// Safe on every node at once: each takes the expired rows no other node has locked.
    public func deleteExpired(now: Int64, limit: Int) throws(StoreError) -> Int {
        try db.query("""
            DELETE FROM records WHERE id IN
              (SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= $1
               ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """, [.int(now), .int(Int64(limit))])
        return db.changes
    }

    public func metadata(_ name: String) throws(StoreError) -> [UInt8]? {
        try db.query("SELECT value FROM meta WHERE name = $1", [.text(name)]).first?.bytes(0)
    }

    public func setMetadata(_ name: String, _ value: [UInt8]) throws(StoreError) {
        try db.query("INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                     [.text(name), .bytes(value)])
    }

    public func hasRecords() throws(StoreError) -> Bool {
        try db.query("SELECT EXISTS (SELECT 1 FROM records)").first?.int(0) == 1
    }

    public func signUnsignedAliases(_ sign: (IssuedAlias, String) -> [UInt8]) throws(StoreError) -> Int {
        var unsigned: [(IssuedAlias, String)] = []
        for row in try db.query("SELECT alias, record_id, format FROM aliases WHERE mac IS NULL") {
            guard let alias = row.text(0), let recordID = row.text(1), let format = row.text(2),
                let issued = IssuedAlias.fromStore(alias: alias, storedFormat: format)
            else { continue }
            unsigned.append((issued, recordID))
        }
        for (alias, recordID) in unsigned {
            try db.query("UPDATE aliases SET mac = $1, format = $3 WHERE alias = $2",
                         [.bytes(sign(alias, recordID)), .text(alias.alias), .text(alias.storedFormat)])
        }
        return unsigned.count
    }

    public func records(after id: String?, limit: Int) throws(StoreError) -> [StoredRecord] {
        var out: [StoredRecord] = []
        for row in try db.query("SELECT id FROM records WHERE id > $1 ORDER BY id LIMIT $2", [.text(id ?? ""), .int(Int64(limit))]) {
            guard let id = row.text(0) else { continue }
            if let record = try readRecord(db.query(Self.recordByID, [.text(id)])) {
                out.append(record)
            }
        }
        return out
    }

    public func recordCount() throws(StoreError) -> Int {
        Int(try db.query("SELECT count(*) FROM records").first?.int(0) ?? 0)
    }
}
