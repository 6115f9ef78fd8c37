/// Bulk jobs (``JobStore``, issue 60), as ``SQLiteAliasStore`` keeps them. Several nodes share
/// the table: a job is taken with `FOR UPDATE SKIP LOCKED` (two nodes asking at once get two
/// jobs, or one gets none), and every later step is conditional on the holder.
extension PostgreSQLAliasStore {
    static let jobsSchema = """
        CREATE TABLE IF NOT EXISTS jobs (
            id text COLLATE "C" PRIMARY KEY,
            kind text NOT NULL,
            state text NOT NULL,
            spec bytea NOT NULL,
            owner text NOT NULL,
            key_id text NOT NULL,
            wrapped_key bytea NOT NULL,
            input_chunks bigint NOT NULL DEFAULT 0,
            cursor bigint NOT NULL DEFAULT 0,
            imported bigint NOT NULL DEFAULT 0,
            refused bigint NOT NULL DEFAULT 0,
            output_chunks bigint NOT NULL DEFAULT 0,
            lease_holder text,
            lease_until bigint,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            expires_at bigint,
            failure text,
            mapping_bytes bigint NOT NULL DEFAULT 0,
            advice_bytes bigint NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS jobs_runnable ON jobs (id) WHERE state IN ('queued', 'running');
        CREATE INDEX IF NOT EXISTS jobs_by_expiry ON jobs (expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX IF NOT EXISTS jobs_receiving ON jobs (updated_at) WHERE state = 'receiving';
        CREATE TABLE IF NOT EXISTS job_chunks (
            job text COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            part integer NOT NULL,
            idx bigint NOT NULL,
            sealed bytea NOT NULL,
            PRIMARY KEY (job, part, idx)
        );
        """

    private static let jobColumns = StoredJob.columns

    package func createJob(_ job: StoredJob) throws(StoreError) {
        try db.query(
            """
            INSERT INTO jobs (id, kind, state, spec, owner, key_id, wrapped_key, input_chunks, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
            """,
            [
                .text(job.id.text), .text(job.kind.rawValue), .text(job.state.rawValue), .bytes(job.spec),
                .text(job.owner), .text(job.keyID), .bytes(job.wrappedKey), .int(Int64(job.inputChunks)),
                .int(job.createdAt),
            ])
    }

    package func appendJobInput(_ id: JobID, index: Int, sealed: [UInt8], now: Int64) throws(StoreError) -> Bool {
        let counted = try db.query(
            """
            UPDATE jobs SET input_chunks = input_chunks + 1, updated_at = $3
            WHERE id = $1 AND state = 'receiving' AND input_chunks = $2 RETURNING 1
            """, [.text(id.text), .int(Int64(index)), .int(now)])
        guard counted.count == 1 else { return false }
        try db.query(
            "INSERT INTO job_chunks (job, part, idx, sealed) VALUES ($1, 0, $2, $3)",
            [.text(id.text), .int(Int64(index)), .bytes(sealed)])
        return true
    }

    /// The class of the advisory locks that serialize one owner's input checks (`cjob`): two
    /// 32-bit keys, a space apart from the migration's single 64-bit one.
    static let jobInputLockClass: Int64 = 0x636A_6F62

    package func jobInputChunks(owner: String, except: JobID) throws(StoreError) -> Int {
        // Held to the end of the transaction, which stores the chunk checked: another node's
        // check of the same owner waits for it, so two nodes cannot each see room for one
        // chunk and both store theirs (READ COMMITTED alone would let them).
        try db.query(
            "SELECT pg_advisory_xact_lock($1::int4, hashtext($2))", [.int(Self.jobInputLockClass), .text(owner)])
        let rows = try db.query(
            """
            SELECT (COALESCE((
                SELECT SUM(input_chunks) FROM jobs
                WHERE owner = $1 AND id <> $2 AND kind = 'import'
                    AND state IN ('receiving', 'queued', 'running', 'cancelled')), 0)
            + (SELECT count(*) FROM jobs j JOIN job_chunks c ON c.job = j.id AND c.part = 0
                WHERE j.owner = $1 AND j.id <> $2 AND j.kind = 'import' AND j.state IN ('done', 'failed')))::int8
            """, [.text(owner), .text(except.text)])
        return Int(rows.first?.int(0) ?? 0)
    }

    package func job(_ id: JobID) throws(StoreError) -> StoredJob? {
        guard let row = try db.query("SELECT \(Self.jobColumns) FROM jobs WHERE id = $1", [.text(id.text)]).first
        else { return nil }
        return try StoredJob(row: ShiftedRow(row: row, by: 0))
    }

    package func jobs(before: JobID?, owner: String?, limit: Int) throws(StoreError) -> [StoredJob] {
        var rows: [StoredJob] = []
        for row in try db.query(
            """
            SELECT \(Self.jobColumns) FROM jobs
            WHERE ($1::text IS NULL OR id < $1) AND ($2::text IS NULL OR owner = $2) ORDER BY id DESC LIMIT $3
            """, [before.map { .text($0.text) } ?? .null, owner.map { .text($0) } ?? .null, .int(Int64(limit))])
        {
            rows.append(try StoredJob(row: ShiftedRow(row: row, by: 0)))
        }
        return rows
    }

    package func claimJob(holder: String, now: Int64, until: Int64) throws(StoreError) -> StoredJob? {
        guard
            let row = try db.query(
                """
                UPDATE jobs SET state = 'running', lease_holder = $1, lease_until = $3, updated_at = $2
                WHERE id = (
                    SELECT id FROM jobs
                    WHERE state IN ('queued', 'running')
                      AND (state = 'queued' OR coalesce(lease_until, 0) < $2)
                    ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                  AND (state = 'queued' OR coalesce(lease_until, 0) < $2)
                RETURNING \(Self.jobColumns)
                """, [.text(holder), .int(now), .int(until)]
            ).first
        else { return nil }
        return try StoredJob(row: ShiftedRow(row: row, by: 0))
    }

    package func advanceJob(
        _ id: JobID, holder: String, from cursor: Int64, to progress: JobProgress, leaseUntil: Int64,
        outputs: [JobOutputChunk], now: Int64
    ) throws(StoreError) -> Bool {
        let moved = try db.query(
            """
            UPDATE jobs SET cursor = $4, imported = $5, refused = $6, output_chunks = $7, lease_until = $8, updated_at = $9,
                mapping_bytes = $10, advice_bytes = $11
            WHERE id = $1 AND state = 'running' AND lease_holder = $2 AND cursor = $3 RETURNING 1
            """,
            [
                .text(id.text), .text(holder), .int(cursor), .int(progress.cursor), .int(progress.imported),
                .int(progress.refused), .int(Int64(progress.outputChunks)), .int(leaseUntil), .int(now),
                .int(progress.mappingBytes), .int(progress.adviceBytes),
            ])
        guard moved.count == 1 else { return false }
        guard !outputs.isEmpty else { return true }
        try db.query(
            """
            INSERT INTO job_chunks (job, part, idx, sealed)
            SELECT $1, * FROM unnest($2::int8[]::int[], $3::int8[], $4::bytea[])
            ON CONFLICT (job, part, idx) DO UPDATE SET sealed = excluded.sealed
            """,
            [
                .text(id.text), .ints(outputs.map { Int64($0.part.rawValue) }), .ints(outputs.map { Int64($0.index) }),
                .byteStrings(outputs.map(\.sealed)),
            ])
        return true
    }

    package func setJobState(
        _ id: JobID, from: Set<JobState>, to: JobState, holder: String?, now: Int64, expiresAt: Int64?,
        failure: String?
    ) throws(StoreError) -> Bool {
        try db.query(
            """
            UPDATE jobs SET state = $3, lease_holder = NULL, lease_until = NULL, updated_at = $4, expires_at = $5,
                failure = $6
            WHERE id = $1 AND state = ANY($2::text[]) AND ($7::text IS NULL OR lease_holder = $7) RETURNING 1
            """,
            [
                .text(id.text), .texts(from.map(\.rawValue)), .text(to.rawValue), .int(now),
                expiresAt.map { .int($0) } ?? .null, failure.map { .text($0) } ?? .null,
                holder.map { .text($0) } ?? .null,
            ]
        ).count == 1
    }

    package func deleteJobChunks(_ id: JobID, part: JobPart, limit: Int) throws(StoreError) -> Int {
        try db.query(
            """
            DELETE FROM job_chunks WHERE job = $1 AND part = $3 AND idx IN (
                SELECT idx FROM job_chunks WHERE job = $1 AND part = $3 ORDER BY idx LIMIT $2)
            RETURNING 1
            """, [.text(id.text), .int(Int64(limit)), .int(Int64(part.rawValue))]
        ).count
    }

    package func approveJob(_ id: JobID, approval sealed: [UInt8], now: Int64) throws(StoreError) -> Bool {
        let moved = try db.query(
            """
            UPDATE jobs SET state = 'queued', expires_at = NULL, updated_at = $2
            WHERE id = $1 AND state = 'awaiting_approval' AND coalesce(expires_at, 0) > $2 RETURNING 1
            """, [.text(id.text), .int(now)])
        guard moved.count == 1 else { return false }
        try db.query(
            """
            INSERT INTO job_chunks (job, part, idx, sealed) VALUES ($1, \(JobPart.approval.rawValue), 0, $2)
            ON CONFLICT (job, part, idx) DO UPDATE SET sealed = excluded.sealed
            """, [.text(id.text), .bytes(sealed)])
        return true
    }

    package func deleteExpiredJobs(now: Int64, idleBefore: Int64, limit: Int) throws(StoreError) -> Int {
        let chunks = try db.query(
            """
            DELETE FROM job_chunks WHERE (job, part, idx) IN (
                (SELECT job, part, idx FROM job_chunks WHERE job IN (
                    SELECT id FROM jobs WHERE expires_at <= $1
                    UNION SELECT id FROM jobs WHERE state = 'receiving' AND updated_at < $2) LIMIT $3)
                UNION (SELECT job, part, idx FROM job_chunks WHERE part = 0 AND job IN (
                    SELECT id FROM jobs WHERE state IN ('done', 'failed')) LIMIT $3)
                UNION (SELECT job, part, idx FROM job_chunks WHERE part = 3 AND job IN (
                    SELECT id FROM jobs WHERE state = 'failed') LIMIT $3)
                LIMIT $3)
            RETURNING 1
            """, [.int(now), .int(idleBefore), .int(Int64(limit))]
        ).count
        let jobs = try db.query(
            """
            DELETE FROM jobs WHERE id IN (
                SELECT id FROM jobs WHERE (expires_at <= $1 OR (state = 'receiving' AND updated_at < $2))
                AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job_chunks.job = jobs.id)
                LIMIT $3)
            RETURNING 1
            """, [.int(now), .int(idleBefore), .int(Int64(limit))]
        ).count
        return chunks + jobs
    }

    package func wrappedJobKeys(keyID: String, after: JobID?, limit: Int) throws(StoreError) -> [StoredJob] {
        try db.query(
            "SELECT \(Self.jobColumns) FROM jobs WHERE key_id = $1 AND id > $2 ORDER BY id LIMIT \(max(limit, 1))",
            [.text(keyID), .text(after?.text ?? "")]
        ).map { row throws(StoreError) in try StoredJob(row: ShiftedRow(row: row, by: 0)) }
    }

    package func rewrapJobKeys(_ changes: [(old: StoredJob, new: StoredJob)]) throws(StoreError) -> Set<String> {
        var done: Set<String> = []
        for (old, new) in changes {
            let changed = try db.query(
                """
                UPDATE jobs SET key_id = $1, wrapped_key = $2 WHERE id = $3 AND key_id = $4 AND wrapped_key = $5
                RETURNING 1
                """,
                [
                    .text(new.keyID), .bytes(new.wrappedKey), .text(old.id.text), .text(old.keyID),
                    .bytes(old.wrappedKey),
                ])
            if !changed.isEmpty { done.insert(old.id.text) }
        }
        return done
    }
}
