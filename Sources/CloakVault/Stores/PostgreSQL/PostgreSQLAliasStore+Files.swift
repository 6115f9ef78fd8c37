/// Files (``FileStore``) on PostgreSQL: the same tables as SQLite's (migrations 8 and 9).
extension PostgreSQLAliasStore {
    package func startFile(_ file: StoredFile) throws(StoreError) {
        try db.query(
            """
            INSERT INTO files (upload_id, key_id, wrapped_key, chunk_count, created_at, updated_at)
            VALUES ($1, $2, $3, 0, $4, $4)
            """,
            [.text(file.uploadID), .text(file.keyID), .bytes(file.wrappedKey), .int(file.createdAt)])
    }

    package func appendFileChunk(uploadID: String, index: Int, sealed: [UInt8]) throws(StoreError) {
        try db.query(
            """
            INSERT INTO file_chunks (upload_id, idx, sealed)
            SELECT $1, $2::int8::int, $3 WHERE EXISTS (SELECT 1 FROM files WHERE upload_id = $1 AND record_id IS NULL)
            """, [.text(uploadID), .int(Int64(index)), .bytes(sealed)])
    }

    package func finishFile(uploadID: String, chunkCount: Int, recordID: String) throws(StoreError) -> Bool {
        let updated = try db.query(
            """
            UPDATE files SET record_id = $2, chunk_count = $3::int8::int
            WHERE upload_id = $1 AND record_id IS NULL
              AND (SELECT count(*) FROM file_chunks WHERE upload_id = $1) = $3
              AND NOT EXISTS (SELECT 1 FROM file_chunks WHERE upload_id = $1 AND idx >= $3)
            RETURNING 1
            """, [.text(uploadID), .text(recordID), .int(Int64(chunkCount))])
        return updated.count == 1
    }

    package func moveFile(uploadID: String, from: String?, to: String) throws(StoreError) -> Bool {
        try db.query(
            """
            UPDATE files SET record_id = $3
            WHERE upload_id = $1 AND record_id IS NOT NULL AND record_id = coalesce($2, record_id) RETURNING 1
            """,
            [.text(uploadID), from.map { .text($0) } ?? .null, .text(to)]
        ).count == 1
    }

    package func file(recordID: String) throws(StoreError) -> StoredFile? {
        guard
            let row = try db.query(
                "SELECT upload_id, key_id, wrapped_key, chunk_count::int8, created_at FROM files WHERE record_id = $1",
                [.text(recordID)]
            ).first, let uploadID = row.text(0), let keyID = row.text(1), let wrapped = row.bytes(2)
        else { return nil }
        return StoredFile(
            uploadID: uploadID, keyID: keyID, wrappedKey: wrapped, chunkCount: Int(row.int(3) ?? 0),
            createdAt: row.int(4) ?? 0, recordID: recordID)
    }

    /// ``ChunkStream``'s read, spelled once a kind.
    private static let chunkReads: (file: String, job: String) = {
        let spell: (Int, Bool) -> String = { n, isInt in isInt ? "$\(n)::int8" : "$\(n)" }
        return (ChunkStream.readQuery(.file, spell), ChunkStream.readQuery(.job, spell))
    }()

    /// A file's or a job's chunks (``ChunkStream``: one query for both kinds).
    package func chunks(_ stream: ChunkStream, from index: Int, limit: Int) throws(StoreError) -> [[UInt8]] {
        var parameters: [PostgreSQLConnection.Value] = stream.keys.map { key in
            switch key {
            case let .text(text): .text(text)
            case let .int(number): .int(number)
            }
        }
        parameters += [.int(Int64(index)), .int(Int64(limit))]
        return try db.query(stream.kind == .file ? Self.chunkReads.file : Self.chunkReads.job, parameters)
            .map { $0.bytes(0) ?? [] }
    }

    package func touchFile(uploadID: String, at: Int64) throws(StoreError) -> Bool {
        try db.query(
            "UPDATE files SET updated_at = greatest(updated_at, $2) WHERE upload_id = $1 AND record_id IS NULL RETURNING 1",
            [.text(uploadID), .int(at)]
        ).count == 1
    }

    package func deleteUnfinishedFile(uploadID: String) throws(StoreError) -> Bool {
        try db.query(
            "DELETE FROM files WHERE upload_id = $1 AND record_id IS NULL RETURNING 1", [.text(uploadID)]
        ).count == 1
    }

    /// The outer `WHERE` repeats the inner one: under READ COMMITTED, a delete that waited on a
    /// row being finished re-checks only its own conditions on the row's new version, and the
    /// subquery's were read before (issue 55, item 7: an acknowledged file was deleted). Rows
    /// another transaction holds are skipped, not waited on.
    package func deleteAbandonedFiles(idleBefore: Int64, limit: Int) throws(StoreError) -> Int {
        try db.query(Sweeps.abandonedFiles, [.int(idleBefore), .int(Int64(limit))]).count
    }
}

extension PostgreSQLAliasStore {
    package func wrappedFileKeys(keyID: String, after: String?, limit: Int) throws(StoreError) -> [StoredFile] {
        Self.files(
            try db.query(
                """
                SELECT upload_id, key_id, wrapped_key, chunk_count::int8, created_at, record_id FROM files
                WHERE key_id = $1 AND upload_id > $2 ORDER BY upload_id \(Self.pageLimit(limit))
                """, [.text(keyID), .text(after ?? "")]))
    }

    package func finishedFiles(after: String?, limit: Int) throws(StoreError) -> [StoredFile] {
        Self.files(
            try db.query(
                """
                SELECT upload_id, key_id, wrapped_key, chunk_count::int8, created_at, record_id FROM files
                WHERE record_id IS NOT NULL AND upload_id > $1 ORDER BY upload_id \(Self.pageLimit(limit))
                """, [.text(after ?? "")]))
    }

    private static func files(_ rows: [PostgreSQLConnection.Row]) -> [StoredFile] {
        rows.compactMap { row in
            guard let uploadID = row.text(0), let key = row.text(1), let wrapped = row.bytes(2) else { return nil }
            return StoredFile(
                uploadID: uploadID, keyID: key, wrappedKey: wrapped, chunkCount: Int(row.int(3) ?? 0),
                createdAt: row.int(4) ?? 0, recordID: row.text(5))
        }
    }

    package func rewrapFileKeys(_ changes: [(old: StoredFile, new: StoredFile)]) throws(StoreError) -> Set<String> {
        var done: Set<String> = []
        for (old, new) in changes {
            let updated = try db.query(
                """
                UPDATE files SET key_id = $1, wrapped_key = $2
                WHERE upload_id = $3 AND key_id = $4 AND wrapped_key = $5 RETURNING 1
                """,
                [
                    .text(new.keyID), .bytes(new.wrappedKey), .text(old.uploadID), .text(old.keyID),
                    .bytes(old.wrappedKey),
                ])
            if updated.count == 1 { done.insert(old.uploadID) }
        }
        return done
    }
}
