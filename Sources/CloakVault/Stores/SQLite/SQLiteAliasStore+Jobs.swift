/// Bulk jobs (``JobStore``, issue 60): a `jobs` row each, and their sealed chunks in
/// `job_chunks`, deleted with the job.
extension SQLiteAliasStore {
    static let jobsSchema = """
        CREATE TABLE IF NOT EXISTS jobs (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            spec BLOB NOT NULL,
            owner TEXT NOT NULL,
            key_id TEXT NOT NULL,
            wrapped_key BLOB NOT NULL,
            input_chunks INTEGER NOT NULL DEFAULT 0,
            cursor INTEGER NOT NULL DEFAULT 0,
            imported INTEGER NOT NULL DEFAULT 0,
            refused INTEGER NOT NULL DEFAULT 0,
            output_chunks INTEGER NOT NULL DEFAULT 0,
            lease_holder TEXT,
            lease_until INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            expires_at INTEGER,
            failure TEXT,
            mapping_bytes INTEGER NOT NULL DEFAULT 0,
            advice_bytes INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS jobs_runnable ON jobs(state, id) WHERE state IN ('queued', 'running');
        CREATE INDEX IF NOT EXISTS jobs_by_expiry ON jobs(expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX IF NOT EXISTS jobs_receiving ON jobs(updated_at) WHERE state = 'receiving';
        CREATE INDEX IF NOT EXISTS jobs_by_owner ON jobs(owner);
        CREATE TABLE IF NOT EXISTS job_chunks (
            job TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            part INTEGER NOT NULL,
            idx INTEGER NOT NULL,
            sealed BLOB NOT NULL,
            PRIMARY KEY (job, part, idx)
        ) WITHOUT ROWID;
        """

    package func createJob(_ job: StoredJob) throws(StoreError) {
        let s = try db.statement(
            """
            INSERT INTO jobs (id, kind, state, spec, owner, key_id, wrapped_key, input_chunks, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
            """)
        s.bind(1, job.id.text)
        s.bind(2, job.kind.rawValue)
        s.bind(3, job.state.rawValue)
        s.bind(4, job.spec)
        s.bind(5, job.owner)
        s.bind(6, job.keyID)
        s.bind(7, job.wrappedKey)
        s.bind(8, Int64(job.inputChunks))
        s.bind(9, job.createdAt)
        try s.run()
    }

    package func appendJobInput(_ id: JobID, index: Int, sealed: [UInt8], now: Int64) throws(StoreError) -> Bool {
        let counted = try db.statement(
            """
            UPDATE jobs SET input_chunks = input_chunks + 1, updated_at = ?3
            WHERE id = ?1 AND state = 'receiving' AND input_chunks = ?2
            """)
        counted.bind(1, id.text)
        counted.bind(2, Int64(index))
        counted.bind(3, now)
        try counted.run()
        guard db.changes == 1 else { return false }
        let s = try db.statement("INSERT INTO job_chunks (job, part, idx, sealed) VALUES (?1, 0, ?2, ?3)")
        s.bind(1, id.text)
        s.bind(2, Int64(index))
        s.bind(3, sealed)
        try s.run()
        return true
    }

    package func jobInputChunks(owner: String, except: JobID) throws(StoreError) -> Int {
        let s = try db.statement(
            """
            SELECT COALESCE((
                SELECT SUM(input_chunks) FROM jobs
                WHERE owner = ?1 AND id <> ?2 AND kind = 'import'
                    AND state IN ('receiving', 'queued', 'running', 'cancelled')), 0)
            + (SELECT count(*) FROM jobs j JOIN job_chunks c ON c.job = j.id AND c.part = 0
                WHERE j.owner = ?1 AND j.id <> ?2 AND j.kind = 'import' AND j.state IN ('done', 'failed'))
            """)
        defer { s.finish() }
        s.bind(1, owner)
        s.bind(2, except.text)
        guard try s.step() else { return 0 }
        return Int(s.int64(0) ?? 0)
    }

    package func job(_ id: JobID) throws(StoreError) -> StoredJob? {
        let s = try db.statement("SELECT \(StoredJob.columns) FROM jobs WHERE id = ?1")
        defer { s.finish() }
        s.bind(1, id.text)
        guard try s.step() else { return nil }
        return try StoredJob(row: s)
    }

    package func jobs(before: JobID?, owner: String?, limit: Int) throws(StoreError) -> [StoredJob] {
        let s = try db.statement(
            """
            SELECT \(StoredJob.columns) FROM jobs
            WHERE (?1 IS NULL OR id < ?1) AND (?2 IS NULL OR owner = ?2) ORDER BY id DESC LIMIT ?3
            """)
        defer { s.finish() }
        s.bind(1, before?.text)
        s.bind(2, owner)
        s.bind(3, Int64(limit))
        var out: [StoredJob] = []
        while try s.step() { out.append(try StoredJob(row: s)) }
        return out
    }

    package func claimJob(holder: String, now: Int64, until: Int64) throws(StoreError) -> StoredJob? {
        // One writer at a time (the transaction holds SQLite's write lock): read, then take.
        let s = try db.statement(
            """
            SELECT id FROM jobs WHERE state = 'queued' OR (state = 'running' AND coalesce(lease_until, 0) < ?1)
            ORDER BY id LIMIT 1
            """)
        s.bind(1, now)
        let found = try s.step() ? s.text(0) : nil
        s.finish()
        guard let found, let id = JobID(found) else { return nil }
        let take = try db.statement(
            """
            UPDATE jobs SET state = 'running', lease_holder = ?2, lease_until = ?3, updated_at = ?4
            WHERE id = ?1 AND (state = 'queued' OR (state = 'running' AND coalesce(lease_until, 0) < ?4))
            """)
        take.bind(1, id.text)
        take.bind(2, holder)
        take.bind(3, until)
        take.bind(4, now)
        try take.run()
        guard db.changes == 1 else { return nil }
        return try job(id)
    }

    package func advanceJob(
        _ id: JobID, holder: String, from cursor: Int64, to progress: JobProgress, leaseUntil: Int64,
        outputs: [JobOutputChunk], now: Int64
    ) throws(StoreError) -> Bool {
        let s = try db.statement(
            """
            UPDATE jobs SET cursor = ?4, imported = ?5, refused = ?6, output_chunks = ?7, lease_until = ?8, updated_at = ?9,
                mapping_bytes = ?10, advice_bytes = ?11
            WHERE id = ?1 AND state = 'running' AND lease_holder = ?2 AND cursor = ?3
            """)
        s.bind(1, id.text)
        s.bind(2, holder)
        s.bind(3, cursor)
        s.bind(4, progress.cursor)
        s.bind(5, progress.imported)
        s.bind(6, progress.refused)
        s.bind(7, Int64(progress.outputChunks))
        s.bind(8, leaseUntil)
        s.bind(9, now)
        s.bind(10, progress.mappingBytes)
        s.bind(11, progress.adviceBytes)
        try s.run()
        guard db.changes == 1 else { return false }
        for chunk in outputs {
            // Taken again each time: a cached statement comes back reset, ready for new values.
            // An export started again by another node writes its chunks over the first run's.
            let insert = try db.statement(
                "INSERT OR REPLACE INTO job_chunks (job, part, idx, sealed) VALUES (?1, ?2, ?3, ?4)")
            insert.bind(1, id.text)
            insert.bind(2, Int64(chunk.part.rawValue))
            insert.bind(3, Int64(chunk.index))
            insert.bind(4, chunk.sealed)
            try insert.run()
        }
        return true
    }

    package func setJobState(
        _ id: JobID, from: Set<JobState>, to: JobState, holder: String?, now: Int64, expiresAt: Int64?,
        failure: String?
    ) throws(StoreError) -> Bool {
        guard let current = try job(id), from.contains(current.state),
            holder == nil || current.lease?.holder == holder
        else { return false }
        let s = try db.statement(
            """
            UPDATE jobs SET state = ?3, lease_holder = NULL, lease_until = NULL, updated_at = ?4, expires_at = ?5,
                failure = ?6
            WHERE id = ?1 AND state = ?2
            """)
        s.bind(1, id.text)
        s.bind(2, current.state.rawValue)
        s.bind(3, to.rawValue)
        s.bind(4, now)
        s.bind(5, expiresAt)
        s.bind(6, failure)
        try s.run()
        return db.changes == 1
    }

    package func deleteJobChunks(_ id: JobID, part: JobPart, limit: Int) throws(StoreError) -> Int {
        let s = try db.statement(
            """
            DELETE FROM job_chunks WHERE job = ?1 AND part = ?3 AND idx IN (
                SELECT idx FROM job_chunks WHERE job = ?1 AND part = ?3 ORDER BY idx LIMIT ?2)
            """)
        s.bind(1, id.text)
        s.bind(2, Int64(limit))
        s.bind(3, Int64(part.rawValue))
        try s.run()
        return db.changes
    }

    package func approveJob(_ id: JobID, approval sealed: [UInt8], now: Int64) throws(StoreError) -> Bool {
        let s = try db.statement(
            """
            UPDATE jobs SET state = 'queued', expires_at = NULL, updated_at = ?2
            WHERE id = ?1 AND state = 'awaiting_approval' AND coalesce(expires_at, 0) > ?2
            """)
        s.bind(1, id.text)
        s.bind(2, now)
        try s.run()
        guard db.changes == 1 else { return false }
        let insert = try db.statement(
            "INSERT OR REPLACE INTO job_chunks (job, part, idx, sealed) VALUES (?1, \(JobPart.approval.rawValue), 0, ?2)"
        )
        insert.bind(1, id.text)
        insert.bind(2, sealed)
        try insert.run()
        return true
    }

    package func deleteExpiredJobs(now: Int64, idleBefore: Int64, limit: Int) throws(StoreError) -> Int {
        let chunks = try db.statement(
            """
            DELETE FROM job_chunks WHERE (job, part, idx) IN (
                SELECT job, part, idx FROM job_chunks WHERE job IN (
                    SELECT id FROM jobs WHERE expires_at <= ?1
                    UNION SELECT id FROM jobs WHERE state = 'receiving' AND updated_at < ?2)
                UNION SELECT job, part, idx FROM job_chunks WHERE part = 0 AND job IN (
                    SELECT id FROM jobs WHERE state IN ('done', 'failed'))
                UNION SELECT job, part, idx FROM job_chunks WHERE part = 3 AND job IN (
                    SELECT id FROM jobs WHERE state = 'failed')
                LIMIT ?3)
            """)
        chunks.bind(1, now)
        chunks.bind(2, idleBefore)
        chunks.bind(3, Int64(limit))
        try chunks.run()
        let deleted = db.changes
        let jobs = try db.statement(
            """
            DELETE FROM jobs WHERE id IN (
                SELECT id FROM jobs WHERE (expires_at <= ?1 OR (state = 'receiving' AND updated_at < ?2))
                AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job = jobs.id)
                LIMIT ?3)
            """)
        jobs.bind(1, now)
        jobs.bind(2, idleBefore)
        jobs.bind(3, Int64(limit))
        try jobs.run()
        return deleted + db.changes
    }

    package func wrappedJobKeys(keyID: String, after: JobID?, limit: Int) throws(StoreError) -> [StoredJob] {
        let s = try db.statement(
            "SELECT \(StoredJob.columns) FROM jobs WHERE key_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
        defer { s.finish() }
        s.bind(1, keyID)
        s.bind(2, after?.text ?? "")
        s.bind(3, Int64(limit))
        var out: [StoredJob] = []
        while try s.step() { out.append(try StoredJob(row: s)) }
        return out
    }

    package func rewrapJobKeys(_ changes: [(old: StoredJob, new: StoredJob)]) throws(StoreError) -> Set<String> {
        var done: Set<String> = []
        for (old, new) in changes {
            let s = try db.statement(
                "UPDATE jobs SET key_id = ?1, wrapped_key = ?2 WHERE id = ?3 AND key_id = ?4 AND wrapped_key = ?5")
            s.bind(1, new.keyID)
            s.bind(2, new.wrappedKey)
            s.bind(3, old.id.text)
            s.bind(4, old.keyID)
            s.bind(5, old.wrappedKey)
            try s.run()
            if db.changes == 1 { done.insert(old.id.text) }
        }
        return done
    }
}
