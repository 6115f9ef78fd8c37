import CloakCrypto

/// What `cloak keys` asks of the file: counts by key version, pages of one version's sealed
/// values (along the primary key: no index by version, which would cost every insert), the
/// conditional re-seals, the ring's compare-and-set, the audit trail. The CLI opens its own
/// connection; WAL lets it write between the server's commits.
extension SQLiteAliasStore {
    package func recordCounts() throws(StoreError) -> [String: Int] {
        // Files' and jobs' wrapped keys and groups count too: a version is in use while a file's or
        // a job's key, or a group, is sealed with it (a job's until it expires).
        let s = try db.statement(
            """
            SELECT key_id, count(*) FROM (
                SELECT key_id FROM records UNION ALL SELECT key_id FROM files UNION ALL SELECT key_id FROM jobs
                UNION ALL SELECT key_id FROM record_groups
            ) GROUP BY key_id
            """)
        defer { s.finish() }
        var out: [String: Int] = [:]
        while try s.step() {
            if let id = s.text(0) { out[id] = Int(s.int64(1) ?? 0) }
        }
        return out
    }

    package func keyUseCounts() throws(StoreError) -> [String: [KeyUse: Int]] {
        let s = try db.statement(
            """
            SELECT key_id, 'records', count(*) FROM records GROUP BY key_id
            UNION ALL SELECT key_id, 'files', count(*) FROM files GROUP BY key_id
            UNION ALL SELECT key_id, 'jobs', count(*) FROM jobs GROUP BY key_id
            UNION ALL SELECT key_id, 'groups', count(*) FROM record_groups GROUP BY key_id
            """)
        defer { s.finish() }
        var out: [String: [KeyUse: Int]] = [:]
        while try s.step() {
            if let id = s.text(0), let use = s.text(1).flatMap(KeyUse.init(rawValue:)) {
                out[id, default: [:]][use] = Int(s.int64(2) ?? 0)
            }
        }
        return out
    }

    package func sealedRecords(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord] {
        try sealedRows(in: "records", keyID: keyID, after: id, limit: limit)
    }

    /// ``sealedRecords(keyID:after:limit:)`` of the rows of `table` (`records`, `record_groups`:
    /// the same sealed columns); a row missing one is left where it is (its version stays in use).
    func sealedRows(in table: String, keyID: String, after id: String?, limit: Int) throws(StoreError)
        -> [SealedRecord]
    {
        let s = try db.statement(
            "SELECT id, nonce, ciphertext, tag FROM \(table) WHERE key_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
        defer { s.finish() }
        s.bind(1, keyID)
        s.bind(2, id ?? "")
        s.bind(3, Int64(limit))
        var out: [SealedRecord] = []
        while try s.step() {
            guard let id = s.text(0), let nonce = s.blob(1), let ciphertext = s.blob(2), let tag = s.blob(3) else {
                continue
            }
            out.append(
                SealedRecord(id: id, keyID: keyID, sealed: .init(nonce: nonce, ciphertext: ciphertext, tag: tag)))
        }
        return out
    }

    package func reseal(_ records: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String> {
        try reseal(records, in: "records")
    }

    /// ``reseal(_:)`` of the rows of `table` (`records`, `record_groups`: the same sealed columns).
    func reseal(_ records: [(old: SealedRecord, new: SealedRecord)], in table: String) throws(StoreError)
        -> Set<String>
    {
        var done = Set<String>()
        for (old, new) in records {
            let s = try db.statement(
                """
                UPDATE \(table) SET key_id = ?1, nonce = ?2, ciphertext = ?3, tag = ?4
                WHERE id = ?5 AND key_id = ?6 AND nonce = ?7
                """)
            s.bind(1, new.keyID)
            s.bind(2, new.sealed.nonce)
            s.bind(3, new.sealed.ciphertext)
            s.bind(4, new.sealed.tag)
            s.bind(5, old.id)
            s.bind(6, old.keyID)
            s.bind(7, old.sealed.nonce)
            try s.run()
            if db.changes == 1 { done.insert(old.id) }
        }
        return done
    }

    package func replaceMetadata(_ name: String, expected: [UInt8]?, with value: [UInt8]) throws(StoreError) -> Bool {
        let s: Statement
        if let expected {
            // CAST: a value someone wrote as TEXT (sqlite3's shell does) never equals a BLOB, and
            // the compare-and-set would fail for good.
            s = try db.statement("UPDATE meta SET value = ?2 WHERE name = ?1 AND CAST(value AS BLOB) = ?3")
            s.bind(3, expected)
        } else {
            s = try db.statement("INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING")
        }
        s.bind(1, name)
        s.bind(2, value)
        try s.run()
        return db.changes == 1
    }

    package func appendKeyAudit(_ line: String, at time: Int64) throws(StoreError) {
        let s = try db.statement("INSERT INTO key_audit (at, line) VALUES (?1, ?2)")
        s.bind(1, time)
        s.bind(2, line)
        try s.run()
    }

    package func keyAuditEntries(offset: Int, limit: Int) throws(StoreError) -> [(at: Int64, line: String)] {
        let s = try db.statement("SELECT at, line FROM key_audit ORDER BY seq LIMIT ?1 OFFSET ?2")
        defer { s.finish() }
        s.bind(1, Int64(limit))
        s.bind(2, Int64(offset))
        var out: [(at: Int64, line: String)] = []
        while try s.step() { if let line = s.text(1) { out.append((s.int64(0) ?? 0, line)) } }
        return out
    }

    package func keyAudit(limit: Int) throws(StoreError) -> [String] {
        let s = try db.statement("SELECT line FROM key_audit ORDER BY seq DESC LIMIT ?1")
        defer { s.finish() }
        s.bind(1, Int64(limit))
        var out: [String] = []
        while try s.step() { if let line = s.text(0) { out.append(line) } }
        return out.reversed()
    }
}
