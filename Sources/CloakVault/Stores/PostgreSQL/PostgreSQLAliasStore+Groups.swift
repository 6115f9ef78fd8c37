import CloakCrypto

/// Groups (``GroupStore``, issue 76) on PostgreSQL: the same tables as SQLite's
/// (``groupsSchema``, a migration of its own).
extension PostgreSQLAliasStore {
    static let groupsSchema = """
        CREATE TABLE record_groups (
            id text COLLATE "C" PRIMARY KEY,
            key_id text NOT NULL,
            nonce bytea NOT NULL,
            ciphertext bytea NOT NULL,
            tag bytea NOT NULL,
            created_at bigint NOT NULL
        );
        CREATE TABLE group_members (
            record_id text COLLATE "C" NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            group_id text COLLATE "C" NOT NULL REFERENCES record_groups(id) ON DELETE CASCADE,
            PRIMARY KEY (record_id, group_id)
        );
        CREATE INDEX group_members_by_group ON group_members (group_id);
        """

    /// The columns ``StoredGroup/init(row:)`` reads, members last (a comma list).
    /// ``groupColumns`` without the members (an empty list).
    private static let bodyColumns = "g.id, g.key_id, g.nonce, g.ciphertext, g.tag, g.created_at, NULL::text"
    private static let groupColumns =
        "g.id, g.key_id, g.nonce, g.ciphertext, g.tag, g.created_at, (SELECT string_agg(record_id, ',') FROM group_members WHERE group_id = g.id)"

    /// One statement: the group and its index rows (`unnest` of the members).
    package func insertGroup(_ group: StoredGroup) throws(StoreError) {
        try db.query(
            """
            WITH g AS (
                INSERT INTO record_groups (id, key_id, nonce, ciphertext, tag, created_at)
                VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
            )
            INSERT INTO group_members (record_id, group_id)
            SELECT DISTINCT m, g.id FROM g, unnest(string_to_array($7, ',')) AS m
            """,
            [
                .text(group.id), .text(group.keyID), .bytes(group.sealed.nonce), .bytes(group.sealed.ciphertext),
                .bytes(group.sealed.tag), .int(group.createdAt), .text(group.members.joined(separator: ",")),
            ])
    }

    package func insertGroups(_ groups: [StoredGroup]) throws(StoreError) {
        guard groups.count > 1 else {
            if let group = groups.first { try insertGroup(group) }
            return
        }
        var members: (records: [String], groups: [String]) = ([], [])
        for group in groups {
            for member in Set(group.members) {
                members.records.append(member)
                members.groups.append(group.id)
            }
        }
        try db.query(
            """
            WITH g AS (
                INSERT INTO record_groups (id, key_id, nonce, ciphertext, tag, created_at)
                SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::bytea[], $6::int8[])
                RETURNING id
            )
            INSERT INTO group_members (record_id, group_id)
            SELECT m.record_id, m.group_id FROM unnest($7::text[], $8::text[]) AS m(record_id, group_id)
            JOIN g ON g.id = m.group_id
            """,
            [
                .texts(groups.map(\.id)), .texts(groups.map(\.keyID)), .byteStrings(groups.map(\.sealed.nonce)),
                .byteStrings(groups.map(\.sealed.ciphertext)), .byteStrings(groups.map(\.sealed.tag)),
                .ints(groups.map(\.createdAt)), .texts(members.records), .texts(members.groups),
            ])
    }

    package func groups(after id: String?, limit: Int, withMembers: Bool) throws(StoreError) -> [StoredGroup] {
        try db.query(
            "SELECT \(withMembers ? Self.groupColumns : Self.bodyColumns) FROM record_groups g WHERE g.id > $1 ORDER BY g.id LIMIT $2",
            [.text(id ?? ""), .int(Int64(limit))]
        ).map { row throws(StoreError) in try StoredGroup(row: row) }
    }

    package func group(id: String) throws(StoreError) -> StoredGroup? {
        try db.query("SELECT \(Self.groupColumns) FROM record_groups g WHERE g.id = $1", [.text(id)]).first.map {
            row throws(StoreError) in try StoredGroup(row: row)
        }
    }

    package func groups(ofRecord recordID: String) throws(StoreError) -> [StoredGroup] {
        try db.query(
            """
            SELECT \(Self.groupColumns) FROM group_members m JOIN record_groups g ON g.id = m.group_id
            WHERE m.record_id = $1 ORDER BY g.id
            """, [.text(recordID)]
        ).map { row throws(StoreError) in try StoredGroup(row: row) }
    }

    /// One statement: the members of a page of groups, through the index.
    package func groupMembers(_ groupIDs: [String]) throws(StoreError) -> [String: StoredRecord] {
        guard !groupIDs.isEmpty else { return [:] }
        var found = AliasedRecords()
        for row in try db.query(
            """
            SELECT r.id, \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
                a.alias, a.format, a.mac, a.seq
            FROM records r
            LEFT JOIN LATERAL (SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id LIMIT 1000) a ON true
            WHERE r.id IN (
                SELECT m.record_id FROM group_members m WHERE m.group_id = ANY (string_to_array($1, ',')))
            """, [.text(groupIDs.joined(separator: ","))])
        {
            guard let recordID = row.text(0) else { continue }
            try found.add(row, key: recordID, recordAt: 1, aliasAt: 14)
        }
        return found.records
    }

    package func groupedRecords(_ recordIDs: [String], asOf: Int64) throws(StoreError) -> Set<String> {
        guard !recordIDs.isEmpty else { return [] }
        return Set(
            try db.query(
                """
                SELECT DISTINCT m.record_id FROM group_members m JOIN record_groups g ON g.id = m.group_id
                WHERE m.record_id = ANY (string_to_array($1, ',')) AND g.created_at <= $2
                """, [.text(recordIDs.joined(separator: ",")), .int(asOf)]
            ).compactMap { $0.text(0) })
    }

    package func groupCount() throws(StoreError) -> Int {
        Int(try db.query("SELECT count(*)::int8 FROM record_groups").first?.int(0) ?? 0)
    }

    package func sealedGroups(keyID: String, after id: String?, limit: Int) throws(StoreError) -> [SealedRecord] {
        try db.query(
            "SELECT id, nonce, ciphertext, tag FROM record_groups WHERE key_id = $1 AND id > $2 ORDER BY id LIMIT $3",
            [.text(keyID), .text(id ?? ""), .int(Int64(limit))]
        ).map { row throws(StoreError) in
            guard let id = row.text(0), let nonce = row.bytes(1), let ciphertext = row.bytes(2), let tag = row.bytes(3)
            else { throw .unavailable("a group row is incomplete") }
            return SealedRecord(
                id: id, keyID: keyID, sealed: AESGCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag))
        }
    }

    package func resealGroups(_ groups: [(old: SealedRecord, new: SealedRecord)]) throws(StoreError) -> Set<String> {
        try reseal(groups, in: "record_groups")
    }
}
