/// The audit blocks (issue 59), as ``SQLiteAliasStore`` keeps them: a row a block keyed by an
/// identity, its place in its chain unique, found newest first through the time of its latest
/// event, an alias reference's blocks through `audit_aliases`, written with each block (the
/// trail's upkeep indexes blocks an older node wrote without it, `WHERE NOT indexed`).
extension PostgreSQLAliasStore {
    static let auditSchema = """
        CREATE TABLE IF NOT EXISTS audit_blocks (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            chain text COLLATE "C" NOT NULL,
            first_seq bigint NOT NULL,
            last_seq bigint NOT NULL,
            last_at bigint NOT NULL,
            body bytea NOT NULL,
            prev bytea NOT NULL,
            mac bytea NOT NULL,
            indexed boolean NOT NULL DEFAULT false,
            UNIQUE (chain, first_seq)
        );
        CREATE INDEX IF NOT EXISTS audit_blocks_by_time ON audit_blocks (last_at, id);
        CREATE INDEX IF NOT EXISTS audit_blocks_unindexed ON audit_blocks (id) WHERE NOT indexed;
        CREATE TABLE IF NOT EXISTS audit_aliases (
            ref bigint NOT NULL,
            block bigint NOT NULL,
            PRIMARY KEY (ref, block)
        );
        """

    static let auditColumns = StoredAuditBlock.columns

    /// The blocks and their alias index in one statement: each block is written indexed, its
    /// alias references beside it (``AuditBlockBody/aliasReferenceKeys(_:)``), so the upkeep
    /// never reads it back to index it, nor rewrites its row (a block's body is most of a
    /// commit's WAL: issue 74 measured 0.4 KiB a create saved). Blocks written without their
    /// index (by an older node) are still found by the upkeep, `WHERE NOT indexed`.
    package var indexesAuditBlocksAsWritten: Bool { true }

    package func appendAuditBlocks(_ blocks: [AuditBlock]) throws(StoreError) {
        guard !blocks.isEmpty else { return }
        var summaries: [AuditBlock.Summary] = []
        var refs: [Int64?] = [], refChains: [String] = [], refFirsts: [Int64?] = []
        for block in blocks {
            guard let summary = block.summary else { throw .unavailable("an audit block holds no event") }
            summaries.append(summary)
            for key in AuditBlockBody.aliasReferenceKeys(block.body) ?? [] {
                refs.append(key)
                refChains.append(block.chain)
                refFirsts.append(block.first)
            }
        }
        try db.query(
            """
            WITH added AS (
                INSERT INTO audit_blocks (chain, first_seq, last_seq, last_at, body, prev, mac, indexed)
                SELECT c, f, l, la, b, p, m, true
                FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::bytea[], $6::bytea[], $7::bytea[])
                    AS t(c, f, l, la, b, p, m)
                RETURNING id, chain, first_seq
            )
            INSERT INTO audit_aliases (ref, block)
            SELECT r.ref, added.id FROM unnest($8::int8[], $9::text[], $10::int8[]) AS r(ref, c, f)
            JOIN added ON added.chain = r.c AND added.first_seq = r.f
            ON CONFLICT DO NOTHING
            """,
            [
                .texts(blocks.map(\.chain)), .ints(blocks.map(\.first)), .ints(summaries.map(\.last)),
                .ints(summaries.map(\.lastAt)), .byteStrings(blocks.map(\.body)),
                .byteStrings(blocks.map(\.previousMAC)), .byteStrings(blocks.map(\.mac)),
                .ints(refs), .texts(refChains), .ints(refFirsts),
            ])
    }

    package func auditBlocks(before: AuditBlockPosition?, from: Int64?, aliasReference: String?, limit: Int)
        throws(StoreError) -> [StoredAuditBlock]
    {
        var conditions: [String] = []
        var values: [PostgreSQLConnection.Value] = []
        if let before {
            values += [.int(before.lastAt), .int(before.id)]
            conditions.append("(last_at, id) < ($\(values.count - 1), $\(values.count))")
        }
        if let from {
            values.append(.int(from))
            conditions.append("last_at >= $\(values.count)")
        }
        if let aliasReference {
            values.append(.int(AuditReferenceKey.key(aliasReference) ?? 0))
            conditions.append(
                "id IN (SELECT block FROM audit_aliases WHERE ref = $\(values.count) UNION ALL SELECT id FROM audit_blocks WHERE NOT indexed)"
            )
        }
        values.append(.int(Int64(limit)))
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try readAuditBlocks(
            db.query(
                "SELECT \(Self.auditColumns) FROM audit_blocks \(filter) ORDER BY last_at DESC, id DESC LIMIT $\(values.count)",
                values))
    }

    package func auditChains() throws(StoreError) -> [String] {
        try db.query("SELECT DISTINCT chain FROM audit_blocks ORDER BY chain").compactMap { $0.text(0) }
    }

    package func newestAuditBlocks(chainPrefix prefix: String) throws(StoreError) -> [StoredAuditBlock] {
        let end = AuditChainNames.end(of: prefix)
        var out: [StoredAuditBlock] = []
        var after = prefix
        while let chain = try db.query(
            "SELECT chain FROM audit_blocks WHERE chain > $1 AND chain < $2 ORDER BY chain LIMIT 1",
            [.text(after), .text(end)]
        ).first?.text(0), chain.hasPrefix(prefix) {
            out += try readAuditBlocks(
                db.query(
                    "SELECT \(Self.auditColumns) FROM audit_blocks WHERE chain = $1 ORDER BY first_seq DESC LIMIT 1",
                    [.text(chain)]))
            after = chain
        }
        return out
    }

    package func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [StoredAuditBlock] {
        try readAuditBlocks(
            db.query(
                "SELECT \(Self.auditColumns) FROM audit_blocks WHERE chain = $1 AND first_seq > $2 ORDER BY first_seq LIMIT $3",
                [.text(chain), .int(seq), .int(Int64(limit))]))
    }

    /// The advisory lock of the audit sweep: one node at a time ("cloak" and 1).
    static let auditSweepLock: Int64 = 0x636C_6F61_6B01

    package func deleteAuditBlocks(before at: Int64, limit: Int, authentic: (AuditBlock) -> Bool) throws(StoreError)
        -> [String: AuditTrim.Start]
    {
        guard
            try db.query("SELECT pg_try_advisory_xact_lock($1)::int::int8", [.int(Self.auditSweepLock)]).first?.int(0)
                == 1
        else { return [:] }
        let chains = try db.query(
            "SELECT DISTINCT chain FROM (SELECT chain FROM audit_blocks WHERE last_at < $1 ORDER BY last_at LIMIT $2) c",
            [.int(at), .int(Int64(limit))]
        ).compactMap { $0.text(0) }
        var budget = limit
        var starts: [String: AuditTrim.Start] = [:]
        for chain in chains.sorted() where budget > 0 {
            guard
                let (old, last) = try sweepableAuditBlocks(of: chain, before: at, limit: budget, authentic: authentic),
                let end = old.last?.block.first
            else { continue }
            budget -= old.count
            var keys: [Int64?] = []
            var ids: [Int64?] = []
            for stored in old {
                for key in AuditBlockBody.aliasReferenceKeys(stored.block.body) ?? [] {
                    keys.append(key)
                    ids.append(stored.id)
                }
            }
            if !keys.isEmpty {
                try db.query(
                    """
                    DELETE FROM audit_aliases a USING unnest($1::int8[], $2::int8[]) AS gone(ref, block)
                    WHERE a.ref = gone.ref AND a.block = gone.block
                    """, [.ints(keys), .ints(ids)])
            }
            try db.query("DELETE FROM audit_blocks WHERE chain = $1 AND first_seq <= $2", [.text(chain), .int(end)])
            let left = try db.query("SELECT min(first_seq) FROM audit_blocks WHERE chain = $1", [.text(chain)]).first?
                .int(0)
            starts[chain] = AuditTrim.Start(first: left ?? last + 1, gone: left == nil)
        }
        return starts
    }

    package func indexAuditAliases(limit: Int) throws(StoreError) -> Int {
        // Several nodes may index at once: each takes blocks no other holds.
        let blocks = try readAuditBlocks(
            db.query(
                "SELECT \(Self.auditColumns) FROM audit_blocks WHERE NOT indexed ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
                [.int(Int64(limit))]))
        guard !blocks.isEmpty else { return 0 }
        var keys: [Int64?] = []
        var ids: [Int64?] = []
        for stored in blocks {
            for key in AuditBlockBody.aliasReferenceKeys(stored.block.body) ?? [] {
                keys.append(key)
                ids.append(stored.id)
            }
        }
        if !keys.isEmpty {
            try db.query(
                "INSERT INTO audit_aliases (ref, block) SELECT * FROM unnest($1::int8[], $2::int8[]) ON CONFLICT DO NOTHING",
                [.ints(keys), .ints(ids)])
        }
        try db.query(
            "UPDATE audit_blocks SET indexed = true WHERE id = ANY($1::int8[])", [.ints(blocks.map { $0.id })])
        return blocks.count
    }

    /// A block's `indexed` column is its own: nothing of the index is the store's as a whole.
    package func auditIndexProblem() throws(StoreError) -> String? { nil }

    package func auditAliasIndexHolds(_ stored: StoredAuditBlock, keys: [Int64]) throws(StoreError) -> Bool {
        guard
            try db.query("SELECT indexed::int::int8 FROM audit_blocks WHERE id = $1", [.int(stored.id)]).first?.int(0)
                == 1, !keys.isEmpty
        else { return true }
        let found = try db.query(
            "SELECT count(*)::int8 FROM audit_aliases WHERE block = $1 AND ref = ANY($2::int8[])",
            [.int(stored.id), .ints(keys.map { $0 })]
        ).first?.int(0)
        return found == Int64(keys.count)
    }

    private func readAuditBlocks(_ rows: [PostgreSQLConnection.Row]) throws(StoreError) -> [StoredAuditBlock] {
        var out: [StoredAuditBlock] = []
        out.reserveCapacity(rows.count)
        for row in rows { out.append(try StoredAuditBlock(row: ShiftedRow(row: row, by: 0))) }
        return out
    }
}
