/// The audit events (issue 59), a block a commit (``AuditBlock``): one row each, in insertion
/// order (the table's own integer key), its place in its chain unique, found newest first
/// through the time of its latest event. An alias reference's blocks are found through
/// `audit_aliases`, which the trail's upkeep fills off the requests' path
/// (``indexAuditAliases(limit:)``; blocks not indexed yet sit in a small partial index until
/// then): a random key inserted per event was the largest part of what auditing cost a create.
/// (The table `audit_events`, one row an event, is what builds before the blocks wrote; it is
/// left as it was and no longer read.)
extension SQLiteAliasStore {
    static let auditSchema = """
        CREATE TABLE IF NOT EXISTS audit_blocks (
            id INTEGER PRIMARY KEY,
            chain TEXT NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            last_at INTEGER NOT NULL,
            body BLOB NOT NULL,
            prev BLOB NOT NULL,
            mac BLOB NOT NULL,
            indexed INTEGER NOT NULL DEFAULT 0,
            UNIQUE (chain, first_seq)
        );
        CREATE INDEX IF NOT EXISTS audit_blocks_by_time ON audit_blocks(last_at);
        CREATE INDEX IF NOT EXISTS audit_blocks_unindexed ON audit_blocks(id) WHERE indexed = 0;
        CREATE TABLE IF NOT EXISTS audit_aliases (
            alias_ref TEXT NOT NULL,
            block INTEGER NOT NULL,
            PRIMARY KEY (alias_ref, block)
        ) WITHOUT ROWID;
        """

    static let auditColumns = StoredAuditBlock.columns

    package func appendAuditBlocks(_ blocks: [AuditBlock]) throws(StoreError) {
        for block in blocks {
            guard let summary = block.summary else { throw .unavailable("an audit block holds no event") }
            let s = try db.statement(
                "INSERT INTO audit_blocks (chain, first_seq, last_seq, last_at, body, prev, mac) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            )
            s.bind(1, block.chain)
            s.bind(2, block.first)
            s.bind(3, summary.last)
            s.bind(4, summary.lastAt)
            s.bind(5, block.body)
            s.bind(6, block.previousMAC)
            s.bind(7, block.mac)
            try s.run()
        }
    }

    package func auditBlocks(before: AuditBlockPosition?, from: Int64?, aliasReference: String?, limit: Int)
        throws(StoreError) -> [StoredAuditBlock]
    {
        var conditions: [String] = []
        if before != nil { conditions.append("(last_at, id) < (?1, ?2)") }
        if from != nil { conditions.append("last_at >= ?3") }
        if aliasReference != nil {
            conditions.append(
                "id IN (SELECT block FROM audit_aliases WHERE alias_ref = ?4 UNION ALL SELECT id FROM audit_blocks WHERE indexed = 0)"
            )
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        // With an alias, its few blocks are found by key and sorted (`+last_at`: not the
        // time index, which would walk every block in the window).
        let order = aliasReference == nil ? "last_at DESC, id DESC" : "+last_at DESC, id DESC"
        let s = try db.statement(
            "SELECT \(Self.auditColumns) FROM audit_blocks \(filter) ORDER BY \(order) LIMIT ?5")
        defer { s.finish() }
        s.bind(1, before?.lastAt)
        s.bind(2, before?.id)
        s.bind(3, from)
        s.bind(4, aliasReference)
        s.bind(5, Int64(limit))
        return try readAuditBlocks(s)
    }

    package func auditChains() throws(StoreError) -> [String] {
        let s = try db.statement("SELECT DISTINCT chain FROM audit_blocks ORDER BY chain")
        defer { s.finish() }
        var out: [String] = []
        while try s.step() { if let chain = s.text(0) { out.append(chain) } }
        return out
    }

    package func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [StoredAuditBlock] {
        let s = try db.statement(
            "SELECT \(Self.auditColumns) FROM audit_blocks WHERE chain = ?1 AND last_seq > ?2 ORDER BY first_seq LIMIT ?3"
        )
        defer { s.finish() }
        s.bind(1, chain)
        s.bind(2, seq)
        s.bind(3, Int64(limit))
        return try readAuditBlocks(s)
    }

    package func deleteAuditBlocks(before at: Int64, limit: Int) throws(StoreError) -> [String: AuditTrim.Start] {
        // The chains with an old block, through the time index.
        let pick = try db.statement(
            "SELECT DISTINCT chain FROM (SELECT chain FROM audit_blocks WHERE last_at < ?1 ORDER BY last_at LIMIT ?2)")
        pick.bind(1, at)
        pick.bind(2, Int64(limit))
        var chains: [String] = []
        do {
            defer { pick.finish() }
            while try pick.step() { if let chain = pick.text(0) { chains.append(chain) } }
        }
        var budget = limit
        var starts: [String: AuditTrim.Start] = [:]
        for chain in chains.sorted() where budget > 0 {
            // Along the chain from its start, up to its first young block.
            var old: [StoredAuditBlock] = []
            var last: Int64?
            for stored in try auditChain(chain, after: 0, limit: budget) {
                guard stored.lastAt < at, let summary = stored.block.summary else { break }
                old.append(stored)
                last = summary.last
            }
            guard let last, let end = old.last?.block.first else { continue }
            budget -= old.count
            for stored in old { try deleteAliasRows(of: stored) }
            let delete = try db.statement("DELETE FROM audit_blocks WHERE chain = ?1 AND first_seq <= ?2")
            delete.bind(1, chain)
            delete.bind(2, end)
            try delete.run()
            let first = try db.statement("SELECT min(first_seq) FROM audit_blocks WHERE chain = ?1")
            defer { first.finish() }
            first.bind(1, chain)
            let left = try first.step() ? first.int64(0) : nil
            starts[chain] = AuditTrim.Start(first: left ?? last + 1, gone: left == nil)
        }
        return starts
    }

    package func indexAuditAliases(limit: Int) throws(StoreError) -> Int {
        let pick = try db.statement(
            "SELECT \(Self.auditColumns) FROM audit_blocks WHERE indexed = 0 ORDER BY id LIMIT ?1")
        pick.bind(1, Int64(limit))
        let blocks: [StoredAuditBlock]
        do {
            defer { pick.finish() }
            blocks = try readAuditBlocks(pick)
        }
        for stored in blocks {
            for reference in stored.block.summary?.aliasReferences ?? [] {
                let add = try db.statement("INSERT OR IGNORE INTO audit_aliases (alias_ref, block) VALUES (?1, ?2)")
                add.bind(1, reference)
                add.bind(2, stored.id)
                try add.run()
            }
            let mark = try db.statement("UPDATE audit_blocks SET indexed = 1 WHERE id = ?1")
            mark.bind(1, stored.id)
            try mark.run()
        }
        return blocks.count
    }

    /// Removes what the alias index holds for a block (its references, read from its body).
    private func deleteAliasRows(of stored: StoredAuditBlock) throws(StoreError) {
        for reference in stored.block.summary?.aliasReferences ?? [] {
            let s = try db.statement("DELETE FROM audit_aliases WHERE alias_ref = ?1 AND block = ?2")
            s.bind(1, reference)
            s.bind(2, stored.id)
            try s.run()
        }
    }

    private func readAuditBlocks(_ s: Statement) throws(StoreError) -> [StoredAuditBlock] {
        var out: [StoredAuditBlock] = []
        while try s.step() { out.append(try StoredAuditBlock(row: s)) }
        return out
    }
}
