import CloakCore
import CloakCrypto
import Foundation

extension PostgreSQLAliasStore {
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
        // Key custody: the key audit trail. (No index by key version: it cost every insert about
        // 5 % more; rewrap pages along the primary key and status counts in one scan.)
        """
        CREATE TABLE key_audit (seq bigserial PRIMARY KEY, at bigint NOT NULL, line text NOT NULL);
        """,
        // Records a batch committed without their first alias (another record's), noted in the
        // same statement: the expiry sweep removes those still without one a minute later
        // (``PostgreSQLAliasStore/insertBatch``, ``PostgreSQLAliasStore/deleteUnaliased(madeBefore:limit:)``).
        """
        CREATE TABLE unaliased (
            record_id text COLLATE "C" PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
            created_at bigint NOT NULL
        );
        """,
        // Files (issue 47): uploads and their sealed chunks (``FileStore``).
        """
        CREATE TABLE files (
            upload_id text COLLATE "C" PRIMARY KEY,
            record_id text COLLATE "C" UNIQUE REFERENCES records(id) ON DELETE CASCADE,
            key_id text NOT NULL,
            wrapped_key bytea NOT NULL,
            chunk_count integer NOT NULL DEFAULT 0,
            created_at bigint NOT NULL
        );
        CREATE INDEX files_unfinished ON files (created_at) WHERE record_id IS NULL;
        CREATE TABLE file_chunks (
            upload_id text COLLATE "C" NOT NULL REFERENCES files(upload_id) ON DELETE CASCADE,
            idx integer NOT NULL,
            sealed bytea NOT NULL,
            PRIMARY KEY (upload_id, idx)
        );
        """,
        // An upload is aged by its last chunk, not its start (issue 55, item 8): a slow client
        // streaming a large file is not swept while it sends. The column has a default (no
        // table rewrite, and a node not yet upgraded still inserts), and an upload's age is the
        // later of its start and its last chunk, so one such a node started is aged as before.
        """
        ALTER TABLE files ADD COLUMN updated_at bigint NOT NULL DEFAULT 0;
        DROP INDEX files_unfinished;
        CREATE INDEX files_idle ON files (greatest(updated_at, created_at)) WHERE record_id IS NULL;
        """,
        // The sweep finds unaliased records by age (issue 56): without it, the notes were read
        // along the primary key and filtered, a scan of every note on each sweep.
        """
        CREATE INDEX unaliased_by_time ON unaliased (created_at);
        """,
        // Audit events (issue 59): ``PostgreSQLAliasStore/auditSchema``. Builds before the
        // events were sealed a block a commit applied a schema of one row an event here
        // (`audit_events`); such a database keeps that table, no longer read, and gets the
        // blocks from the next version. Both are `IF NOT EXISTS`: a new database runs both.
        auditSchema,
        auditSchema,
        // Bulk jobs (issue 60): ``PostgreSQLAliasStore/jobsSchema``.
        jobsSchema,
        // What a token's imports hold is summed for each chunk stored (review V, item 9).
        "CREATE INDEX IF NOT EXISTS jobs_by_owner ON jobs (owner)",
        // Groups of values stored together (issue 76): ``PostgreSQLAliasStore/groupsSchema``.
        groupsSchema,
    ]

    func migrate() throws(StoreError) {
        try db.execute("BEGIN")
        do throws(StoreError) {
            try db.query("SELECT pg_advisory_xact_lock($1)", [.int(Self.migrationLock)])
            try db.execute(
                "CREATE TABLE IF NOT EXISTS cloak_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            let current = try db.query("SELECT coalesce(max(version), 0)::int8 FROM cloak_schema").first?.int(0) ?? 0
            guard current <= Int64(Self.migrations.count) else {
                throw StoreError.unavailable(
                    "the database's schema (version \(current)) is newer than this Cloak knows (\(Self.migrations.count))"
                )
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
}
