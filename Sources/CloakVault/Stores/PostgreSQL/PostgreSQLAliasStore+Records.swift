import CloakCore
import CloakCrypto
import Foundation

extension PostgreSQLAliasStore {
    // Query texts are made once: they are sent and looked up (prepared statements) every time.
    private static let recordByFingerprint = "SELECT \(StoredRecord.columns) FROM records WHERE fingerprint = $1"
    /// Each asked alias's record and all its aliases, one row per alias of the record, in no
    /// order (`seq` says the aliases' order: no Sort node to start). LATERAL with a LIMIT keeps
    /// every lookup an index scan in the generic plan.
    private static let recordsByAlias = """
        SELECT asked.alias, \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
            a.alias, a.format, a.mac, a.seq
        FROM unnest($1::text[]) AS asked(alias)
        JOIN LATERAL (SELECT record_id FROM aliases WHERE alias = asked.alias LIMIT 1) x ON true
        JOIN LATERAL (SELECT * FROM records WHERE id = x.record_id LIMIT 1) r ON true
        JOIN LATERAL (SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id LIMIT 1000) a ON true
        """
    private static let insertRecord = """
        INSERT INTO records (\(StoredRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
        ON CONFLICT DO NOTHING RETURNING 1
        """

    package func record(fingerprint: [UInt8]) throws(StoreError) -> StoredRecord? {
        try readRecord(db.query(Self.recordByFingerprint, [.bytes(fingerprint)]))
    }

    package func record(alias: String) throws(StoreError) -> StoredRecord? {
        try records(aliases: [alias])[alias]
    }

    /// One statement for all of them.
    package func records(aliases: [String]) throws(StoreError) -> [String: StoredRecord] {
        var unique: [String] = []
        var seen = Set<String>()
        for alias in aliases where seen.insert(alias).inserted { unique.append(alias) }
        guard !unique.isEmpty else { return [:] }
        var found = AliasedRecords()
        for row in try db.query(Self.recordsByAlias, [.texts(unique)]) {
            guard let asked = row.text(0) else { continue }
            try found.add(row, key: asked, recordAt: 1, aliasAt: 14)
        }
        return found.records
    }

    private func readRecord(_ rows: [PostgreSQLConnection.Row]) throws(StoreError) -> StoredRecord? {
        guard let s = rows.first else { return nil }
        var record = try StoredRecord(row: s)
        for row in try db.query(
            "SELECT alias, format, mac FROM aliases WHERE record_id = $1 ORDER BY seq", [.text(record.id)])
        {
            if let alias = IssuedAlias(row: row) { record.aliases.append(alias) }
        }
        return record
    }

    /// Inserts with `ON CONFLICT DO NOTHING`: a lost race raises no error, so it neither aborts
    /// the transaction nor writes the conflicting key (an alias, a fingerprint) into the server's
    /// log; which constraint won is then read back.
    package func insert(_ record: StoredRecord) throws(StoreError) {
        let inserted = try db.query(
            Self.insertRecord,
            [
                .text(record.id), record.fingerprint.map { .bytes($0) } ?? .null, .text(record.keyID),
                .bytes(record.sealed.nonce),
                .bytes(record.sealed.ciphertext), .bytes(record.sealed.tag), .text(record.storage.rawValue),
                .text(record.classifiers.joined(separator: ",")), .int(record.createdAt),
                record.expiresAt.map { .int($0) } ?? .null,
                .int(record.intent ? 1 : 0), record.bucket.map { .bytes($0) } ?? .null,
                RevealedRecord.encodeMetadata(record.metadata).map { .text($0) } ?? .null,
            ])
        if inserted.isEmpty {
            if let fingerprint = record.fingerprint,
                try !db.query("SELECT 1 FROM records WHERE fingerprint = $1", [.bytes(fingerprint)]).isEmpty
            {
                throw .fingerprintTaken
            }
            throw .unavailable("a record with this id exists")
        }
        for alias in record.aliases { try addAlias(alias, toRecord: record.id) }
    }

    package func addAlias(_ alias: IssuedAlias, toRecord id: String) throws(StoreError) {
        let inserted = try db.query(
            """
            INSERT INTO aliases (alias, record_id, format, mac) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(alias.alias), .text(id), .text(alias.storedFormat), .bytes(alias.mac)])
        guard inserted.isEmpty else { return }
        // The alias is another record's (try the next candidate), or this record got an alias in
        // this format from another writer meanwhile (read it).
        if try !db.query("SELECT 1 FROM aliases WHERE alias = $1", [.text(alias.alias)]).isEmpty { throw .aliasTaken }
        throw .fingerprintTaken
    }

    package func deleteAlias(_ alias: String) throws(StoreError) -> Bool {
        guard
            let recordID = try db.query("DELETE FROM aliases WHERE alias = $1 RETURNING record_id", [.text(alias)])
                .first?.text(0)
        else { return false }
        // The record is locked first, in a statement of its own: another node giving it an
        // alias in another format holds a key-share lock on it until it commits, and one
        // statement's NOT EXISTS would read a snapshot from before that wait, so the cascade
        // would take the alias it just acknowledged. After the lock, the delete's snapshot sees
        // it (READ COMMITTED: a snapshot per statement).
        try db.query("SELECT 1 FROM records WHERE id = $1 FOR UPDATE", [.text(recordID)])
        try db.query(
            "DELETE FROM records WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM aliases WHERE record_id = $1)",
            [.text(recordID)])
        return true
    }

    package func setRecordMetadata(_ metadata: [String: String], recordID: String) throws(StoreError) {
        try db.query(
            "UPDATE records SET metadata = $1 WHERE id = $2",
            [RevealedRecord.encodeMetadata(metadata).map { .text($0) } ?? .null, .text(recordID)])
    }

    package func setExpiry(_ expiresAt: Int64?, recordID: String) throws(StoreError) {
        try db.query(
            "UPDATE records SET expires_at = $1 WHERE id = $2", [expiresAt.map { .int($0) } ?? .null, .text(recordID)])
    }

    package func setClassifiers(_ classifiers: [String], recordID: String) throws(StoreError) {
        try db.query(
            "UPDATE records SET classifiers = $1 WHERE id = $2",
            [.text(classifiers.joined(separator: ",")), .text(recordID)])
    }

    /// One statement a page (a page of a million records' export or migration was two round
    /// trips a record).
    package func records(after id: String?, limit: Int) throws(StoreError) -> [StoredRecord] {
        var found = AliasedRecords()
        for row in try db.query(Self.recordsAfter(limit: limit), [.text(id ?? "")]) {
            guard let recordID = row.text(0) else { continue }
            try found.add(row, key: recordID, recordAt: 1, aliasAt: 14)
        }
        return found.records.values.sorted { $0.id < $1.id }
    }

    package func recordListings(after id: String?, limit: Int) throws(StoreError) -> [RecordListing] {
        var out: [RecordListing] = []
        var aliases: [(seq: Int64, alias: IssuedAlias)] = []
        func close() {
            guard !out.isEmpty else { return }
            out[out.count - 1].aliases = aliases.sorted { $0.seq < $1.seq }.map(\.alias)
            aliases = []
        }
        // Ordered by id (the page's own order); each record's aliases sorted by issue here.
        for row in try db.query(Self.listingsAfter(limit: limit), [.text(id ?? "")]) {
            if out.last?.id != row.text(0) {
                close()
                out.append(try RecordListing(row: row))
            }
            if let alias = IssuedAlias(row: ShiftedRow(row: row, by: 7)) { aliases.append((row.int(10) ?? 0, alias)) }
        }
        close()
        return out
    }

    /// A page of listings' statement (``recordListings(after:limit:)``), its size written in.
    static func listingsAfter(limit: Int) -> String {
        """
        SELECT \(RecordListing.columns(of: "r")), a.alias, a.format, a.mac, a.seq
        FROM (SELECT \(RecordListing.columns) FROM records WHERE id > $1 ORDER BY id \(pageLimit(limit))) r
        LEFT JOIN LATERAL (SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id LIMIT 1000) a ON true
        ORDER BY r.id
        """
    }

    /// A page's statement, its size written in (``pageLimit(_:)``).
    static func recordsAfter(limit: Int) -> String {
        """
        SELECT r.id, \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
            a.alias, a.format, a.mac, a.seq
        FROM (SELECT * FROM records WHERE id > $1 ORDER BY id \(pageLimit(limit))) r
        LEFT JOIN LATERAL (SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id LIMIT 1000) a ON true
        """
    }

    /// The LIMIT of a statement that walks a table a page at a time, as a number in its text,
    /// not a parameter. A generic plan (every statement's, see ``PostgreSQLConnection``) reads
    /// `LIMIT $n` as a tenth of the rows: over a table not yet analysed (just filled by an
    /// import) that planned a Seq Scan and a Sort of the whole table for every page of 500, and
    /// counting 300,000 records for an export took 42 s; with the number the planner knows a
    /// page is a few rows of the index. A walk uses one page size, so one prepared statement.
    static func pageLimit(_ limit: Int) -> String {
        "LIMIT \(max(0, limit))"
    }

    package func recordCount() throws(StoreError) -> Int {
        Int(try db.query("SELECT count(*) FROM records").first?.int(0) ?? 0)
    }

    package func hasRecords() throws(StoreError) -> Bool {
        try db.query("SELECT EXISTS (SELECT 1 FROM records)").first?.int(0) == 1
    }
}
