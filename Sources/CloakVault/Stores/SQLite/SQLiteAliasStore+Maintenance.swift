import CloakCore
import CloakCrypto
import Foundation

/// Metadata, migrations and whole-store reads (`cloak store migrate`, key checks).
extension SQLiteAliasStore {
    package func oldestIntentExpiry(bucket: [UInt8]) throws(StoreError) -> Int64? {
        let s = try db.statement(Sweeps.oldestIntent)
        s.bind(1, bucket)
        defer { s.finish() }
        return try s.step() ? s.int64(0) : nil
    }

    package func metadata(_ name: String) throws(StoreError) -> [UInt8]? {
        let s = try db.statement("SELECT value FROM meta WHERE name = ?1")
        s.bind(1, name)
        defer { s.finish() }
        return try s.step() ? s.blob(0) : nil
    }

    package func setMetadata(_ name: String, _ value: [UInt8]) throws(StoreError) {
        let s = try db.statement(
            "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = ?2")
        s.bind(1, name)
        s.bind(2, value)
        try s.run()
    }

    package func deleteMetadata(_ name: String) throws(StoreError) -> Bool {
        let s = try db.statement("DELETE FROM meta WHERE name = ?1")
        s.bind(1, name)
        try s.run()
        return db.changes == 1
    }

    package func metadataNames(prefix: String) throws(StoreError) -> [String] {
        let s = try db.statement("SELECT name FROM meta WHERE substr(name, 1, length(?1)) = ?1")
        s.bind(1, prefix)
        defer { s.finish() }
        var names: [String] = []
        while try s.step() { if let name = s.text(0) { names.append(name) } }
        return names
    }

    package func hasRecords() throws(StoreError) -> Bool {
        let s = try db.statement("SELECT EXISTS (SELECT 1 FROM records)")
        defer { s.finish() }
        return try s.step() && s.int64(0) == 1
    }

    package func signUnsignedAliases(_ sign: (IssuedAlias, String) -> [UInt8]) throws(StoreError) -> Int {
        let find = try db.statement("SELECT alias, record_id, format FROM aliases WHERE mac IS NULL")
        var unsigned: [(IssuedAlias, String)] = []
        while try find.step() {
            guard let alias = find.text(0), let recordID = find.text(1), let format = find.text(2),
                let issued = IssuedAlias.fromStore(alias: alias, storedFormat: format)
            else { continue }
            unsigned.append((issued, recordID))
        }
        find.finish()
        for (alias, recordID) in unsigned {
            let update = try db.statement("UPDATE aliases SET mac = ?1, format = ?3 WHERE alias = ?2")
            update.bind(1, sign(alias, recordID))
            update.bind(2, alias.alias)
            update.bind(3, alias.storedFormat)
            try update.run()
        }
        return unsigned.count
    }

    package func records(after id: String?, limit: Int) throws(StoreError) -> [StoredRecord] {
        // One snapshot for the page (a caller outside a transaction: an export's reads): a record
        // swept between the ids and its own read would shorten the page, and a page shorter than
        // `limit` ends a walk (review, issue 76 item 4).
        guard isInTransaction else {
            try beginReading()
            defer { rollback() }
            return try records(after: id, limit: limit)
        }
        let s = try db.statement("SELECT id FROM records WHERE id > ?1 ORDER BY id LIMIT ?2")
        s.bind(1, id ?? "")
        s.bind(2, Int64(limit))
        var ids: [String] = []
        while try s.step() { if let id = s.text(0) { ids.append(id) } }
        s.finish()
        var out: [StoredRecord] = []
        for id in ids {
            let r = try db.statement(Self.recordByID)
            r.bind(1, id)
            if let record = try readRecord(r) { out.append(record) }
        }
        return out
    }

    package func recordListings(after id: String?, limit: Int) throws(StoreError) -> [RecordListing] {
        let s = try db.statement(Self.listingsAfter)
        defer { s.finish() }
        s.bind(1, id ?? "")
        s.bind(2, Int64(limit))
        var out: [RecordListing] = []
        while try s.step() {
            if out.last?.id != s.text(0) { out.append(try RecordListing(row: s)) }
            if let alias = IssuedAlias(row: ShiftedRow(row: s, by: 7)) { out[out.count - 1].aliases.append(alias) }
        }
        return out
    }

    /// A page of listings, one row per alias (a record without any: one row, its alias null).
    static let listingsAfter = """
        SELECT \(RecordListing.columns(of: "r")), a.alias, a.format, a.mac
        FROM (SELECT \(RecordListing.columns) FROM records WHERE id > ?1 ORDER BY id LIMIT ?2) r
        LEFT JOIN aliases a ON a.record_id = r.id
        ORDER BY r.id, a.rowid
        """

    package func recordCount() throws(StoreError) -> Int {
        let s = try db.statement("SELECT count(*) FROM records")
        defer { s.finish() }
        return try s.step() ? Int(s.int64(0) ?? 0) : 0
    }
}
