/// Files (``FileStore``): `files` rows (one per upload; `record_id` set when finished) and
/// `file_chunks` rows, deleted with their record through the foreign keys.
extension SQLiteAliasStore {
    static let filesSchema = """
        CREATE TABLE IF NOT EXISTS files (
            upload_id TEXT PRIMARY KEY,
            record_id TEXT UNIQUE REFERENCES records(id) ON DELETE CASCADE,
            key_id TEXT NOT NULL,
            wrapped_key BLOB NOT NULL,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS file_chunks (
            upload_id TEXT NOT NULL REFERENCES files(upload_id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            sealed BLOB NOT NULL,
            PRIMARY KEY (upload_id, idx)
        ) WITHOUT ROWID;
        """

    package func startFile(_ file: StoredFile) throws(StoreError) {
        let s = try db.statement(
            "INSERT INTO files (upload_id, key_id, wrapped_key, chunk_count, created_at, updated_at) VALUES (?1, ?2, ?3, 0, ?4, ?4)"
        )
        s.bind(1, file.uploadID)
        s.bind(2, file.keyID)
        s.bind(3, file.wrappedKey)
        s.bind(4, file.createdAt)
        try s.run()
    }

    package func appendFileChunk(uploadID: String, index: Int, sealed: [UInt8]) throws(StoreError) {
        let s = try db.statement(
            "INSERT INTO file_chunks (upload_id, idx, sealed) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM files WHERE upload_id = ?1 AND record_id IS NULL)"
        )
        s.bind(1, uploadID)
        s.bind(2, Int64(index))
        s.bind(3, sealed)
        try s.run()
    }

    package func finishFile(uploadID: String, chunkCount: Int, recordID: String) throws(StoreError) -> Bool {
        let s = try db.statement(
            """
            UPDATE files SET record_id = ?2, chunk_count = ?3
            WHERE upload_id = ?1 AND record_id IS NULL
              AND (SELECT count(*) FROM file_chunks WHERE upload_id = ?1) = ?3
              AND NOT EXISTS (SELECT 1 FROM file_chunks WHERE upload_id = ?1 AND idx >= ?3)
            """)
        s.bind(1, uploadID)
        s.bind(2, recordID)
        s.bind(3, Int64(chunkCount))
        try s.run()
        return db.changes == 1
    }

    package func moveFile(uploadID: String, from: String?, to: String) throws(StoreError) -> Bool {
        let s = try db.statement(
            "UPDATE files SET record_id = ?3 WHERE upload_id = ?1 AND record_id IS NOT NULL AND record_id = coalesce(?2, record_id)"
        )
        s.bind(1, uploadID)
        s.bind(2, from)
        s.bind(3, to)
        try s.run()
        return db.changes == 1
    }

    package func file(recordID: String) throws(StoreError) -> StoredFile? {
        let s = try db.statement(
            "SELECT upload_id, key_id, wrapped_key, chunk_count, created_at FROM files WHERE record_id = ?1")
        defer { s.finish() }
        s.bind(1, recordID)
        guard try s.step(), let uploadID = s.text(0), let keyID = s.text(1), let wrapped = s.blob(2) else { return nil }
        return StoredFile(
            uploadID: uploadID, keyID: keyID, wrappedKey: wrapped, chunkCount: Int(s.int64(3) ?? 0),
            createdAt: s.int64(4) ?? 0, recordID: recordID)
    }

    /// ``ChunkStream``'s read, spelled once a kind.
    private static let chunkReads = (
        file: ChunkStream.readQuery(.file) { n, _ in "?\(n)" }, job: ChunkStream.readQuery(.job) { n, _ in "?\(n)" }
    )

    /// A file's or a job's chunks (``ChunkStream``: one query for both kinds).
    package func chunks(_ stream: ChunkStream, from index: Int, limit: Int) throws(StoreError) -> [[UInt8]] {
        let s = try db.statement(stream.kind == .file ? Self.chunkReads.file : Self.chunkReads.job)
        defer { s.finish() }
        let keys = stream.keys
        for (offset, key) in keys.enumerated() {
            switch key {
            case let .text(text): s.bind(Int32(offset + 1), text)
            case let .int(number): s.bind(Int32(offset + 1), number)
            }
        }
        s.bind(Int32(keys.count + 1), Int64(index))
        s.bind(Int32(keys.count + 2), Int64(limit))
        var out: [[UInt8]] = []
        while try s.step() { out.append(s.blob(0) ?? []) }
        return out
    }

    package func touchFile(uploadID: String, at: Int64) throws(StoreError) -> Bool {
        let s = try db.statement(
            "UPDATE files SET updated_at = max(updated_at, ?2) WHERE upload_id = ?1 AND record_id IS NULL")
        s.bind(1, uploadID)
        s.bind(2, at)
        try s.run()
        return db.changes == 1
    }

    package func deleteUnfinishedFile(uploadID: String) throws(StoreError) -> Bool {
        let s = try db.statement("DELETE FROM files WHERE upload_id = ?1 AND record_id IS NULL")
        s.bind(1, uploadID)
        try s.run()
        return db.changes == 1
    }

    package func deleteAbandonedFiles(idleBefore: Int64, limit: Int) throws(StoreError) -> Int {
        let s = try db.statement(Sweeps.abandonedFiles)
        s.bind(1, idleBefore)
        s.bind(2, Int64(limit))
        try s.run()
        return db.changes
    }
}

extension SQLiteAliasStore {
    package func wrappedFileKeys(keyID: String, after: String?, limit: Int) throws(StoreError) -> [StoredFile] {
        let s = try db.statement(
            """
            SELECT upload_id, key_id, wrapped_key, chunk_count, created_at, record_id FROM files
            WHERE key_id = ?1 AND upload_id > ?2 ORDER BY upload_id LIMIT ?3
            """)
        s.bind(1, keyID)
        s.bind(2, after ?? "")
        s.bind(3, Int64(limit))
        return try readFiles(s)
    }

    package func finishedFiles(after: String?, limit: Int) throws(StoreError) -> [StoredFile] {
        let s = try db.statement(
            """
            SELECT upload_id, key_id, wrapped_key, chunk_count, created_at, record_id FROM files
            WHERE record_id IS NOT NULL AND upload_id > ?1 ORDER BY upload_id LIMIT ?2
            """)
        s.bind(1, after ?? "")
        s.bind(2, Int64(limit))
        return try readFiles(s)
    }

    private func readFiles(_ s: Statement) throws(StoreError) -> [StoredFile] {
        defer { s.finish() }
        var out: [StoredFile] = []
        while try s.step() {
            guard let uploadID = s.text(0), let key = s.text(1), let wrapped = s.blob(2) else { continue }
            out.append(
                StoredFile(
                    uploadID: uploadID, keyID: key, wrappedKey: wrapped, chunkCount: Int(s.int64(3) ?? 0),
                    createdAt: s.int64(4) ?? 0, recordID: s.text(5)))
        }
        return out
    }

    package func rewrapFileKeys(_ changes: [(old: StoredFile, new: StoredFile)]) throws(StoreError) -> Set<String> {
        var done: Set<String> = []
        for (old, new) in changes {
            let s = try db.statement(
                "UPDATE files SET key_id = ?1, wrapped_key = ?2 WHERE upload_id = ?3 AND key_id = ?4 AND wrapped_key = ?5"
            )
            s.bind(1, new.keyID)
            s.bind(2, new.wrappedKey)
            s.bind(3, old.uploadID)
            s.bind(4, old.keyID)
            s.bind(5, old.wrappedKey)
            try s.run()
            if db.changes == 1 { done.insert(old.uploadID) }
        }
        return done
    }
}
