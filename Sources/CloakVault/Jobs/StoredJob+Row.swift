extension StoredJob {
    /// The jobs table's columns, in the order ``init(row:)`` reads them (both stores).
    static let columns = """
        id, kind, state, spec, owner, key_id, wrapped_key, input_chunks, cursor, imported, refused, \
        output_chunks, lease_holder, lease_until, created_at, updated_at, expires_at, failure, mapping_bytes, \
        advice_bytes
        """

    /// The job in a row of ``columns``.
    init(row: some RecordRow) throws(StoreError) {
        guard let id = row.text(at: 0).flatMap(JobID.init), let kind = row.text(at: 1).flatMap(JobKind.init),
            let state = row.text(at: 2).flatMap(JobState.init), let spec = row.bytes(at: 3),
            let owner = row.text(at: 4), let keyID = row.text(at: 5), let wrapped = row.bytes(at: 6),
            let createdAt = row.integer(at: 14)
        else { throw .unavailable("a job row is incomplete") }
        let lease = row.text(at: 12).map { JobLease(holder: $0, until: row.integer(at: 13) ?? 0) }
        self.init(
            id: id, kind: kind, state: state, spec: spec, owner: owner, keyID: keyID, wrappedKey: wrapped,
            inputChunks: Int(row.integer(at: 7) ?? 0),
            progress: JobProgress(
                cursor: row.integer(at: 8) ?? 0, imported: row.integer(at: 9) ?? 0, refused: row.integer(at: 10) ?? 0,
                outputChunks: Int(row.integer(at: 11) ?? 0), mappingBytes: row.integer(at: 18) ?? 0,
                adviceBytes: row.integer(at: 19) ?? 0),
            lease: lease, createdAt: createdAt, updatedAt: row.integer(at: 15) ?? createdAt,
            expiresAt: row.integer(at: 16), failure: row.text(at: 17))
    }
}
