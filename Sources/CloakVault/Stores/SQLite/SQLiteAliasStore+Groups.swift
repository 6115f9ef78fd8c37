import CloakCore
import CloakCrypto

/// Groups (``GroupStore``, issue 76): `record_groups` rows, and `group_members` rows indexing
/// which records each holds (by record first: an export that starts from records finds their
/// groups, and a record's delete takes its index rows with it through the foreign key).
extension SQLiteAliasStore {
    static let groupsSchema = """
        CREATE TABLE IF NOT EXISTS record_groups (
            id TEXT PRIMARY KEY,
            key_id TEXT NOT NULL,
            nonce BLOB NOT NULL,
            ciphertext BLOB NOT NULL,
            tag BLOB NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS group_members (
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            group_id TEXT NOT NULL REFERENCES record_groups(id) ON DELETE CASCADE,
            PRIMARY KEY (record_id, group_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS group_members_by_group ON group_members(group_id);
        """

    /// The columns ``group(_:)`` reads, members last (a comma list: ids hold no comma).
    /// ``groupColumns`` without the members (an empty list).
    private static let bodyColumns = "g.id, g.key_id, g.nonce, g.ciphertext, g.tag, g.created_at, NULL"
    private static let groupColumns =
        "g.id, g.key_id, g.nonce, g.ciphertext, g.tag, g.created_at, (SELECT group_concat(record_id) FROM group_members WHERE group_id = g.id)"

    package func insertGroup(_ group: StoredGroup) throws(StoreError) {
        let s = try db.statement(
            "INSERT INTO record_groups (id, key_id, nonce, ciphertext, tag, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        )
        s.bind(1, group.id)
        s.bind(2, group.keyID)
        s.bind(3, group.sealed.nonce)
        s.bind(4, group.sealed.ciphertext)
        s.bind(5, group.sealed.tag)
        s.bind(6, group.createdAt)
        try s.run()
        // A row a statement: a statement that writes several rows opens a statement journal,
        // which inside an import batch's savepoint is walked from its start at each statement's
        // end (an import 1.4x slower with three rows a statement, measured).
        for member in Set(group.members) {
            let m = try db.statement("INSERT INTO group_members (record_id, group_id) VALUES (?1, ?2)")
            m.bind(1, member)
            m.bind(2, group.id)
            try m.run()
        }
    }

    package func groups(after id: String?, limit: Int, withMembers: Bool) throws(StoreError) -> [StoredGroup] {
        let s = try db.statement(
            "SELECT \(withMembers ? Self.groupColumns : Self.bodyColumns) FROM record_groups g WHERE g.id > ?1 ORDER BY g.id LIMIT ?2"
        )
        defer { s.finish() }
        s.bind(1, id ?? "")
        s.bind(2, Int64(limit))
        return try readGroups(s)
    }

    package func group(id: String) throws(StoreError) -> StoredGroup? {
        let s = try db.statement("SELECT \(Self.groupColumns) FROM record_groups g WHERE g.id = ?1")
        defer { s.finish() }
        s.bind(1, id)
        return try readGroups(s).first
    }

    package func groups(ofRecord recordID: String) throws(StoreError) -> [StoredGroup] {
        let s = try db.statement(
            """
            SELECT \(Self.groupColumns) FROM group_members m JOIN record_groups g ON g.id = m.group_id
            WHERE m.record_id = ?1 ORDER BY g.id
            """)
        defer { s.finish() }
        s.bind(1, recordID)
        return try readGroups(s)
    }

    /// One statement: the members of a page of groups, through the index (ids as a JSON array).
    package func groupMembers(_ groupIDs: [String]) throws(StoreError) -> [String: StoredRecord] {
        guard !groupIDs.isEmpty else { return [:] }
        let s = try db.statement(
            """
            SELECT \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
                a.alias, a.format, a.mac
            FROM records r LEFT JOIN aliases a ON a.record_id = r.id
            WHERE r.id IN (
                SELECT m.record_id FROM group_members m WHERE m.group_id IN (SELECT value FROM json_each(?1)))
            ORDER BY r.id, a.rowid
            """)
        defer { s.finish() }
        s.bind(1, Self.jsonArray(groupIDs))
        var out: [String: StoredRecord] = [:]
        var last: String?
        while try s.step() {
            let record = try StoredRecord(row: s)
            if last != record.id {
                out[record.id] = record
                last = record.id
            }
            if let alias = IssuedAlias(row: ShiftedRow(row: s, by: 13)) { out[record.id]?.aliases.append(alias) }
        }
        return out
    }

    package func groupedRecords(_ recordIDs: [String], asOf: Int64) throws(StoreError) -> Set<String> {
        guard !recordIDs.isEmpty else { return [] }
        let s = try db.statement(
            """
            SELECT DISTINCT m.record_id FROM group_members m JOIN record_groups g ON g.id = m.group_id
            WHERE m.record_id IN (SELECT value FROM json_each(?1)) AND g.created_at <= ?2
            """)
        defer { s.finish() }
        s.bind(1, Self.jsonArray(recordIDs))
        s.bind(2, asOf)
        var out = Set<String>()
        while try s.step() { if let id = s.text(0) { out.insert(id) } }
        return out
    }

    /// Ids as a JSON array of strings, for `json_each` (record and group ids need no escaping,
    /// but they are escaped all the same).
    static func jsonArray(_ ids: [String]) -> String {
        String(decoding: JSONWriter.encode(.array(ids.map { .string($0) })), as: UTF8.self)
    }

    package func groupCount() throws(StoreError) -> Int {
        let s = try db.statement("SELECT count(*) FROM record_groups")
        defer { s.finish() }
        guard try s.step() else { return 0 }
        return Int(s.int64(0) ?? 0)
    }

    package func sealedGroups(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord] {
        try sealedRows(in: "record_groups", keyID: keyID, after: id, limit: limit)
    }

    package func resealGroups(_ groups: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String> {
        try reseal(groups, in: "record_groups")
    }

    private func readGroups(_ s: Statement) throws(StoreError) -> [StoredGroup] {
        var out: [StoredGroup] = []
        while try s.step() { out.append(try StoredGroup(row: s)) }
        return out
    }
}
