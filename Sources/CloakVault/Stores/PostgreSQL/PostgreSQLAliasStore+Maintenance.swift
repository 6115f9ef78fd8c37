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
        try db.query("SELECT min(expires_at) FROM records WHERE bucket = $1", [.bytes(bucket)]).first?.int(0)
    }

    /// Safe on every node at once: each takes the expired rows no other node has locked.
    package func deleteExpired(now: Int64, limit: Int) throws(StoreError) -> Int {
        try db.query(
            """
            DELETE FROM records WHERE id IN
              (SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= $1
               ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """, [.int(now), .int(Int64(limit))])
        return db.changes
    }

    package func metadata(_ name: String) throws(StoreError) -> [UInt8]? {
        try db.query("SELECT value FROM meta WHERE name = $1", [.text(name)]).first?.bytes(0)
    }

    package func setMetadata(_ name: String, _ value: [UInt8]) throws(StoreError) {
        try db.query(
            "INSERT INTO meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [.text(name), .bytes(value)])
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
