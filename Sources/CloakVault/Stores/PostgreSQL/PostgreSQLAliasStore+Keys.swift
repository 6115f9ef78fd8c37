import CloakCrypto

/// What `cloak keys` asks of the server, safe while every node serves: a re-seal and the ring's
/// replacement are conditional single-row updates (row locks, no table lock), so a node's write
/// between the read and the update wins and the update is skipped.
extension PostgreSQLAliasStore {
    public func recordCounts() throws(StoreError) -> [String: Int] {
        var out: [String: Int] = [:]
        for row in try db.query("SELECT key_id, count(*) FROM records GROUP BY key_id") {
            if let id = row.text(0) { out[id] = Int(row.int(1) ?? 0) }
        }
        return out
    }

    public func sealedRecords(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord] {
        try db.query(
            "SELECT id, nonce, ciphertext, tag FROM records WHERE key_id = $1 AND id > $2 ORDER BY id LIMIT $3",
            [.text(keyID), .text(id ?? ""), .int(Int64(limit))]
        ).compactMap { row in
            guard let id = row.text(0), let nonce = row.bytes(1), let ciphertext = row.bytes(2), let tag = row.bytes(3)
            else { return nil }
            return SealedRecord(id: id, keyID: keyID, sealed: .init(nonce: nonce, ciphertext: ciphertext, tag: tag))
        }
    }

    public func reseal(_ old: SealedRecord, keyID: String, sealed: AESGCM.SealedBox) throws(StoreError) -> Bool {
        try db.query(
            """
            UPDATE records SET key_id = $1, nonce = $2, ciphertext = $3, tag = $4
            WHERE id = $5 AND key_id = $6 AND nonce = $7
            """,
            [
                .text(keyID), .bytes(sealed.nonce), .bytes(sealed.ciphertext), .bytes(sealed.tag), .text(old.id),
                .text(old.keyID), .bytes(old.sealed.nonce),
            ])
        return db.changes == 1
    }

    public func replaceMetadata(_ name: String, expected: [UInt8]?, with value: [UInt8]) throws(StoreError) -> Bool {
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

    public func appendKeyAudit(_ line: String, at time: Int64) throws(StoreError) {
        try db.query("INSERT INTO key_audit (at, line) VALUES ($1, $2)", [.int(time), .text(line)])
    }

    public func keyAudit(limit: Int) throws(StoreError) -> [String] {
        try db.query("SELECT line FROM key_audit ORDER BY seq DESC LIMIT $1", [.int(Int64(limit))])
            .compactMap { $0.text(0) }.reversed()
    }
}
