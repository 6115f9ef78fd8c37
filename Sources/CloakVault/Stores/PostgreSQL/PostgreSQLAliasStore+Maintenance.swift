import CloakCore
import CloakCrypto
import Foundation

extension PostgreSQLAliasStore {
    /// `ON CONFLICT DO UPDATE … WHERE` locks the bucket's row: concurrent nodes take places one
    /// after another, each seeing the count the one before left.
    package func reserveBucketSlot(_ bucket: [UInt8], limit: Int) throws(StoreError) -> Bool {
        try !db.query(
            """
            INSERT INTO bucket_intents (bucket, count) VALUES ($1, 1)
            ON CONFLICT (bucket) DO UPDATE SET count = bucket_intents.count + 1 WHERE bucket_intents.count < $2 RETURNING 1
            """, [.bytes(bucket), .int(Int64(limit))]
        ).isEmpty
    }

    package func oldestIntentExpiry(bucket: [UInt8]) throws(StoreError) -> Int64? {
        try db.query(Sweeps.oldestIntent, [.bytes(bucket)]).first?.int(0)
    }

    /// Safe on every node at once: each takes the expired rows no other node has locked. Records
    /// a batch stored without an alias that still have none ``unaliasedGraceSeconds`` after they
    /// were made go too, up to `limit` more (``deleteUnaliased(madeBefore:limit:)``): nothing can
    /// reveal or delete them.
    package func deleteExpired(now: Int64, limit: Int) throws(StoreError) -> Int {
        try db.query(Sweeps.expiredRecords, [.int(now), .int(Int64(limit))])
        let expired = db.changes
        return try expired + deleteUnaliased(madeBefore: now - Self.unaliasedGraceSeconds, limit: limit)
    }

    /// How long a record a batch stored without an alias may wait for one (its request's next
    /// statements, or the next create of its value on any node) before the sweep removes it.
    /// Far longer than a request takes; and removing one too early fails a request at worst
    /// (see ``deleteUnaliased(madeBefore:limit:)``), it never loses an alias.
    static let unaliasedGraceSeconds: Int64 = 60

    /// Removes up to `limit` records noted in `unaliased` (``insertBatch``) made at or before
    /// `madeBefore` that still have no alias, and forgets the notes of those that got one.
    /// Returns how many records it removed. Runs inside the caller's transaction.
    ///
    /// The records are locked first, in a statement of their own, skipping any another session
    /// holds: a create giving one an alias holds a key-share lock on it until it commits. Once
    /// they are locked no alias can be added to them (the foreign key check waits, then fails on
    /// the deleted row: that request fails, nothing acknowledged is lost), and the delete, a
    /// statement with a snapshot taken after the locks, sees every alias committed before them.
    /// (One statement would not do: its `NOT EXISTS` would read a snapshot from before its wait
    /// for a lock, and the cascade would take an alias committed meanwhile.)
    ///
    /// Every statement reaches a record through its primary key whatever plan it keeps (plans
    /// are generic and made once: `id = ANY($1)` planned while `records` was small scanned the
    /// whole table). The notes are few, and almost always none: then this is one statement.
    func deleteUnaliased(madeBefore: Int64, limit: Int) throws(StoreError) -> Int {
        let noted = try db.query(
            Sweeps.unaliasedNotes, [.int(madeBefore), .int(Int64(limit))]
        ).compactMap { $0.text(0) }
        guard !noted.isEmpty else { return 0 }
        let locked = try db.query(
            """
            SELECT r.id FROM unnest($1::text[]) AS noted(id)
            CROSS JOIN LATERAL (SELECT id FROM records WHERE id = noted.id FOR UPDATE SKIP LOCKED) r
            """, [.texts(noted)]
        ).compactMap { $0.text(0) }
        guard !locked.isEmpty else { return 0 }
        var removed = 0
        for id in locked {
            // The record, unless an alias names it (as deleteAlias does, after its lock).
            try db.query(
                "DELETE FROM records WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM aliases WHERE record_id = $1)",
                [.text(id)])
            removed += db.changes
        }
        try db.query("DELETE FROM unaliased WHERE record_id = ANY($1::text[])", [.texts(locked)])
        return removed
    }

    package func metadata(_ name: String) throws(StoreError) -> [UInt8]? {
        try db.query("SELECT value FROM meta WHERE name = $1", [.text(name)]).first?.bytes(0)
    }

    package func setMetadata(_ name: String, _ value: [UInt8]) throws(StoreError) {
        try db.query(
            "INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [.text(name), .bytes(value)])
    }

    package func deleteMetadata(_ name: String) throws(StoreError) -> Bool {
        try db.query("DELETE FROM meta WHERE name = $1 RETURNING 1", [.text(name)]).count == 1
    }

    package func metadataNames(prefix: String) throws(StoreError) -> [String] {
        try db.query("SELECT name FROM meta WHERE left(name, length($1)) = $1", [.text(prefix)]).compactMap {
            $0.text(0)
        }
    }

    package func signUnsignedAliases(_ sign: (IssuedAlias, String) -> [UInt8]) throws(StoreError) -> Int {
        var unsigned: [(IssuedAlias, String)] = []
        for row in try db.query("SELECT alias, record_id, format FROM aliases WHERE mac IS NULL") {
            guard let alias = row.text(0), let recordID = row.text(1), let format = row.text(2),
                let issued = IssuedAlias.fromStore(alias: alias, storedFormat: format)
            else { continue }
            unsigned.append((issued, recordID))
        }
        for (alias, recordID) in unsigned {
            try db.query(
                "UPDATE aliases SET mac = $1, format = $3 WHERE alias = $2",
                [.bytes(sign(alias, recordID)), .text(alias.alias), .text(alias.storedFormat)])
        }
        return unsigned.count
    }
}
