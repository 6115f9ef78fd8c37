import CloakCrypto

/// What `cloak keys` asks of the server, safe while every node serves: a re-seal and the ring's
/// replacement are conditional single-row updates (row locks, no table lock), so a node's write
/// between the read and the update wins and the update is skipped.
extension PostgreSQLAliasStore {
    package func recordCounts() throws(StoreError) -> [String: Int] {
        var out: [String: Int] = [:]
        // Files' and jobs' wrapped keys and groups count too: a version is in use while a file's or
        // a job's key, or a group, is sealed with it (a job's until it expires).
        for row in try db.query(
            """
            SELECT key_id, count(*) FROM (
                SELECT key_id FROM records UNION ALL SELECT key_id FROM files UNION ALL SELECT key_id FROM jobs
                UNION ALL SELECT key_id FROM record_groups
            ) f GROUP BY key_id
            """
        ) {
            if let id = row.text(0) { out[id] = Int(row.int(1) ?? 0) }
        }
        return out
    }

    package func keyUseCounts() throws(StoreError) -> [String: [KeyUse: Int]] {
        var out: [String: [KeyUse: Int]] = [:]
        for row in try db.query(
            """
            SELECT key_id, 'records', count(*) FROM records GROUP BY key_id
            UNION ALL SELECT key_id, 'files', count(*) FROM files GROUP BY key_id
            UNION ALL SELECT key_id, 'jobs', count(*) FROM jobs GROUP BY key_id
            UNION ALL SELECT key_id, 'groups', count(*) FROM record_groups GROUP BY key_id
            """
        ) {
            if let id = row.text(0), let use = row.text(1).flatMap(KeyUse.init(rawValue:)) {
                out[id, default: [:]][use] = Int(row.int(2) ?? 0)
            }
        }
        return out
    }

    package func sealedRecords(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord] {
        try db.query(
            Self.sealedRecordsAfter(limit: limit), [.text(keyID), .text(id ?? "")]
        ).compactMap { row in
            guard let id = row.text(0), let nonce = row.bytes(1), let ciphertext = row.bytes(2), let tag = row.bytes(3)
            else { return nil }
            return SealedRecord(id: id, keyID: keyID, sealed: .init(nonce: nonce, ciphertext: ciphertext, tag: tag))
        }
    }

    /// A page of a key's records, its size written in (``pageLimit(_:)``).
    static func sealedRecordsAfter(limit: Int) -> String {
        "SELECT id, nonce, ciphertext, tag FROM records WHERE key_id = $1 AND id > $2 ORDER BY id \(pageLimit(limit))"
    }

    /// One statement per 200 records (a round trip each, not one per record).
    package func reseal(_ records: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String> {
        try reseal(records, in: "records")
    }

    /// ``reseal(_:)`` of the rows of `table` (`records`, `record_groups`: the same sealed columns).
    func reseal(_ records: [(old: SealedRecord, new: SealedRecord)], in table: String) throws(StoreError)
        -> Set<String>
    {
        var done = Set<String>()
        var start = 0
        while start < records.count {
            let chunk = records[start..<min(records.count, start + 200)]
            var rows: [String] = []
            var parameters: [PostgreSQLConnection.Value] = []
            for (old, new) in chunk {
                let n = parameters.count
                rows.append(
                    "($\(n + 1)::text, $\(n + 2)::text, $\(n + 3)::bytea, $\(n + 4)::text, $\(n + 5)::bytea, "
                        + "$\(n + 6)::bytea, $\(n + 7)::bytea)")
                parameters += [
                    .text(old.id), .text(old.keyID), .bytes(old.sealed.nonce), .text(new.keyID),
                    .bytes(new.sealed.nonce), .bytes(new.sealed.ciphertext), .bytes(new.sealed.tag),
                ]
            }
            let updated = try db.query(
                """
                UPDATE \(table) AS r SET key_id = v.new_key, nonce = v.new_nonce, ciphertext = v.new_ciphertext,
                    tag = v.new_tag
                FROM (VALUES \(rows.joined(separator: ", ")))
                    AS v (id, old_key, old_nonce, new_key, new_nonce, new_ciphertext, new_tag)
                WHERE r.id = v.id AND r.key_id = v.old_key AND r.nonce = v.old_nonce
                RETURNING r.id
                """, parameters)
            for row in updated { if let id = row.text(0) { done.insert(id) } }
            start += chunk.count
        }
        return done
    }

    package func replaceMetadata(_ name: String, expected: [UInt8]?, with value: [UInt8]) throws(StoreError) -> Bool {
        if let expected {
            try db.query(
                "UPDATE meta SET value = $2 WHERE name = $1 AND value = $3",
                [.text(name), .bytes(value), .bytes(expected)])
        } else {
            try db.query(
                "INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                [.text(name), .bytes(value)])
        }
        return db.changes == 1
    }

    package func appendKeyAudit(_ line: String, at time: Int64) throws(StoreError) {
        try db.query("INSERT INTO key_audit (at, line) VALUES ($1, $2)", [.int(time), .text(line)])
    }

    package func keyAuditEntries(offset: Int, limit: Int) throws(StoreError) -> [(at: Int64, line: String)] {
        try db.query(
            "SELECT at, line FROM key_audit ORDER BY seq LIMIT $1 OFFSET $2", [.int(Int64(limit)), .int(Int64(offset))]
        ).compactMap { row in row.text(1).map { (row.int(0) ?? 0, $0) } }
    }

    package func keyAudit(limit: Int) throws(StoreError) -> [String] {
        try db.query("SELECT line FROM key_audit ORDER BY seq DESC LIMIT $1", [.int(Int64(limit))])
            .compactMap { $0.text(0) }.reversed()
    }
}
