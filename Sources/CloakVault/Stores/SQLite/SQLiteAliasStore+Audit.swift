/// The audit events (issue 59), a block a commit (``AuditBlock``): one row each, in insertion
/// order (the table's own integer key: one more than the largest, so above the mark below
/// unless the newest blocks are swept, and then the sweep lowers the mark), its place in its
/// chain unique, found
/// newest first through the time of its latest event. An alias reference's blocks are found
/// through `audit_aliases`, filled up to the mark kept in `audit_alias_mark`: SQLite has one
/// writer at a time, so the blocks not indexed yet are exactly those after the mark. Blocks are
/// indexed as they are written while the mark stands at the last row (issue 74: the upkeep read
/// each block back a second time); behind it (blocks an older node wrote without), each append
/// first indexes a round of those in order (``indexAuditAliases(limit:)``), as the trail's upkeep
/// does, until the mark is at the last row again. A random
/// key inserted per event was the largest part of what auditing cost a create. (The table
/// `audit_events`, one row an event, is what builds before the blocks wrote; it is left as it
/// was and no longer read.)
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
            UNIQUE (chain, first_seq)
        );
        CREATE INDEX IF NOT EXISTS audit_blocks_by_time ON audit_blocks(last_at);
        CREATE TABLE IF NOT EXISTS audit_aliases (
            ref INTEGER NOT NULL,
            block INTEGER NOT NULL,
            PRIMARY KEY (ref, block)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS audit_alias_mark (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            upto INTEGER NOT NULL
        );
        """

    /// The blocks not indexed yet, as a subquery.
    private static let unindexed =
        "SELECT id FROM audit_blocks WHERE id > (SELECT coalesce(max(upto), 0) FROM audit_alias_mark)"

    static let auditColumns = StoredAuditBlock.columns

    /// Blocks are indexed as written while every block before them is (the mark at the last
    /// row); behind it, an append and the upkeep index the rest first, in order.
    package var indexesAuditBlocksAsWritten: Bool { true }

    package func appendAuditBlocks(_ blocks: [AuditBlock]) throws(StoreError) {
        guard !blocks.isEmpty else { return }
        // In a writer's transaction (BEGIN IMMEDIATE): nobody writes a row between the look at
        // the mark and the inserts, so the mark can follow them. A caller without one (a `cloak
        // keys` command's events) gets one of its own: two commands' statements interleaved
        // would leave a block under the mark without its rows (review, issue 74 part 4).
        guard isInTransaction else {
            try begin()
            do {
                try appendAuditBlocks(blocks)
                try commit()
            } catch {
                rollback()
                throw error
            }
            return
        }
        var mark = try auditAliasMark()
        if let behind = mark, behind.upto < behind.top {
            // Blocks written without their index (a command's before this change, an older
            // node's): a round of them first, so the mark catches up under any load, not only
            // at the upkeep's pace. Bounded: at most a round a call, and only while behind.
            _ = try indexAuditAliases(limit: AuditTrail.indexRound)
            mark = try auditAliasMark()
        }
        let indexing = mark.map { $0.upto == $0.top } ?? false
        var last: Int64 = 0
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
            last = db.lastInsertedRow
            if indexing { try addAliasRows(AuditBlockBody.aliasReferenceKeys(block.body) ?? [], block: last) }
        }
        if indexing { try moveAliasMark(to: last) }
    }

    /// A page of a search's blocks (``auditBlocks(before:from:aliasReference:limit:)``), with or
    /// without each filter: its parameters are always ?1 … ?5.
    static func auditSearch(before: Bool, from: Bool, alias: Bool) -> String {
        var conditions: [String] = []
        if before { conditions.append("(last_at, id) < (?1, ?2)") }
        if from { conditions.append("last_at >= ?3") }
        if alias {
            conditions.append("id IN (SELECT block FROM audit_aliases WHERE ref = ?4 UNION ALL \(unindexed))")
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        // With an alias, its few blocks are found by key and sorted (`+last_at`: not the
        // time index, which would walk every block in the window).
        let order = alias ? "+last_at DESC, id DESC" : "last_at DESC, id DESC"
        return "SELECT \(auditColumns) FROM audit_blocks \(filter) ORDER BY \(order) LIMIT ?5"
    }

    static let auditChainBlocks =
        "SELECT \(auditColumns) FROM audit_blocks WHERE chain = ?1 AND first_seq > ?2 ORDER BY first_seq LIMIT ?3"
    static let auditOldChains =
        "SELECT DISTINCT chain FROM (SELECT chain FROM audit_blocks WHERE last_at < ?1 ORDER BY last_at LIMIT ?2)"
    static let auditToIndex =
        "SELECT \(auditColumns) FROM audit_blocks WHERE id IN (\(unindexed) ORDER BY id LIMIT ?1) ORDER BY id"

    /// The statements that find audit blocks, by name: each goes through an index (the plan
    /// tests, `SweepPlanTests`).
    static let auditFinders: [(String, String)] = [
        ("search by time", auditSearch(before: true, from: true, alias: false)),
        ("search by alias", auditSearch(before: true, from: true, alias: true)),
        ("a chain's blocks", auditChainBlocks), ("the sweep's chains", auditOldChains),
        ("blocks to index", auditToIndex),
    ]

    package func auditBlocks(before: AuditBlockPosition?, from: Int64?, aliasReference: String?, limit: Int)
        throws(StoreError) -> [StoredAuditBlock]
    {
        let s = try db.statement(
            Self.auditSearch(before: before != nil, from: from != nil, alias: aliasReference != nil))
        defer { s.finish() }
        s.bind(1, before?.lastAt)
        s.bind(2, before?.id)
        s.bind(3, from)
        s.bind(4, aliasReference.map { AuditReferenceKey.key($0) ?? 0 })
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

    package func newestAuditBlocks(chainPrefix prefix: String) throws(StoreError) -> [StoredAuditBlock] {
        let end = AuditChainNames.end(of: prefix)
        var out: [StoredAuditBlock] = []
        var after = prefix
        while true {
            // The next chain name of the prefix, through the (chain, first_seq) index.
            let next = try db.statement(
                "SELECT chain FROM audit_blocks WHERE chain > ?1 AND chain < ?2 ORDER BY chain LIMIT 1")
            let chain: String?
            do {
                defer { next.finish() }
                next.bind(1, after)
                next.bind(2, end)
                chain = try next.step() ? next.text(0) : nil
            }
            guard let chain, chain.hasPrefix(prefix) else { return out }
            let s = try db.statement(
                "SELECT \(Self.auditColumns) FROM audit_blocks WHERE chain = ?1 ORDER BY first_seq DESC LIMIT 1")
            s.bind(1, chain)
            out += try readAuditBlocks(s)
            after = chain
        }
    }

    package func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [StoredAuditBlock] {
        let s = try db.statement(Self.auditChainBlocks)
        defer { s.finish() }
        s.bind(1, chain)
        s.bind(2, seq)
        s.bind(3, Int64(limit))
        return try readAuditBlocks(s)
    }

    package func deleteAuditBlocks(before at: Int64, limit: Int, authentic: (AuditBlock) -> Bool) throws(StoreError)
        -> [String: AuditTrim.Start]
    {
        // The chains with an old block, through the time index.
        let pick = try db.statement(Self.auditOldChains)
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
            guard
                let (old, last) = try sweepableAuditBlocks(of: chain, before: at, limit: budget, authentic: authentic),
                let end = old.last?.block.first
            else { continue }
            budget -= old.count
            for stored in old { try deleteAliasRows(of: stored) }
            let delete = try db.statement("DELETE FROM audit_blocks WHERE chain = ?1 AND first_seq <= ?2")
            delete.bind(1, chain)
            delete.bind(2, end)
            try delete.run()
            // A key freed at the top is given again: the mark must not stand above it.
            try db.run(
                "UPDATE audit_alias_mark SET upto = min(upto, (SELECT coalesce(max(id), 0) FROM audit_blocks))")
            let first = try db.statement("SELECT min(first_seq) FROM audit_blocks WHERE chain = ?1")
            defer { first.finish() }
            first.bind(1, chain)
            let left = try first.step() ? first.int64(0) : nil
            starts[chain] = AuditTrim.Start(first: left ?? last + 1, gone: left == nil)
        }
        return starts
    }

    package func indexAuditAliases(limit: Int) throws(StoreError) -> Int {
        let pick = try db.statement(Self.auditToIndex)
        pick.bind(1, Int64(limit))
        let blocks: [StoredAuditBlock]
        do {
            defer { pick.finish() }
            blocks = try readAuditBlocks(pick)
        }
        guard let last = blocks.last?.id else { return 0 }
        for stored in blocks {
            try addAliasRows(AuditBlockBody.aliasReferenceKeys(stored.block.body) ?? [], block: stored.id)
        }
        try moveAliasMark(to: last)
        return blocks.count
    }

    private func addAliasRows(_ keys: [Int64], block: Int64) throws(StoreError) {
        for key in keys {
            let add = try db.statement("INSERT OR IGNORE INTO audit_aliases (ref, block) VALUES (?1, ?2)")
            add.bind(1, key)
            add.bind(2, block)
            try add.run()
        }
    }

    private func moveAliasMark(to last: Int64) throws(StoreError) {
        let mark = try db.statement(
            "INSERT INTO audit_alias_mark (id, upto) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET upto = excluded.upto"
        )
        mark.bind(1, last)
        try mark.run()
    }

    /// Where the alias index stands: the last block row it covers (tests).
    package func auditIndexMark() throws(StoreError) -> Int64? { try auditAliasMark()?.upto }

    /// The alias index's mark and the last block's row: (upto, top).
    private func auditAliasMark() throws(StoreError) -> (upto: Int64, top: Int64)? {
        let mark = try db.statement(
            "SELECT coalesce(max(upto), 0), (SELECT coalesce(max(id), 0) FROM audit_blocks) FROM audit_alias_mark")
        defer { mark.finish() }
        guard try mark.step() else { return nil }
        return (mark.int64(0) ?? 0, mark.int64(1) ?? 0)
    }

    package func auditAliasIndexHolds(_ stored: StoredAuditBlock, keys: [Int64]) throws(StoreError) -> Bool {
        // Indexed: at or below the mark. Judged for this block alone: a mark past every block
        // (the newest blocks deleted, or the mark raised) is the store's fact, named by
        // ``auditIndexProblem()`` once the chains are checked (review V, item 6: judging every
        // block by it named the first block of the first chain, untouched).
        guard let (upto, _) = try auditAliasMark() else { return true }
        guard stored.id <= upto else { return true }
        for key in keys {
            let s = try db.statement("SELECT 1 FROM audit_aliases WHERE ref = ?1 AND block = ?2")
            defer { s.finish() }
            s.bind(1, key)
            s.bind(2, stored.id)
            guard try s.step() else { return false }
        }
        return true
    }

    package func auditIndexProblem() throws(StoreError) -> String? {
        // The sweep is the only one to lower the mark, and never raises it past the last block:
        // a mark past it would hide the blocks written next from alias searches.
        guard let (upto, top) = try auditAliasMark(), upto > top else { return nil }
        return "the alias index's mark (row \(upto)) is past the last block (row \(top)): the newest blocks were "
            + "deleted, or the mark raised; the heads each node logs (--heads) name the chain cut off"
    }

    /// Removes what the alias index holds for a block (its references, read from its body).
    private func deleteAliasRows(of stored: StoredAuditBlock) throws(StoreError) {
        for key in AuditBlockBody.aliasReferenceKeys(stored.block.body) ?? [] {
            let s = try db.statement("DELETE FROM audit_aliases WHERE ref = ?1 AND block = ?2")
            s.bind(1, key)
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
