/// The audit events (issue 59): one row per event in insertion order (the table's own integer
/// key, appended to), its place in its chain unique; read newest first through the time index,
/// or an alias reference's own. Every index costs every audited request its insert (about 8k
/// instructions each, callgrind): a token's events are found through the time index, within
/// the search's window.
extension SQLiteAliasStore {
    static let auditSchema = """
        CREATE TABLE IF NOT EXISTS audit_events (
            id INTEGER PRIMARY KEY,
            chain TEXT NOT NULL,
            seq INTEGER NOT NULL,
            at INTEGER NOT NULL,
            action TEXT NOT NULL,
            token_id TEXT NOT NULL,
            client TEXT NOT NULL,
            alias_ref TEXT,
            result TEXT NOT NULL,
            facts TEXT NOT NULL,
            prev BLOB NOT NULL,
            mac BLOB NOT NULL,
            UNIQUE (chain, seq)
        );
        CREATE INDEX IF NOT EXISTS audit_by_time ON audit_events(at);
        CREATE INDEX IF NOT EXISTS audit_by_alias ON audit_events(alias_ref, at) WHERE alias_ref IS NOT NULL;
        """

    static let auditColumns = AuditEvent.columns

    package func appendAuditEvents(_ events: [AuditEvent]) throws(StoreError) {
        for event in events {
            let s = try db.statement(
                "INSERT INTO audit_events (\(Self.auditColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")
            s.bind(1, event.chain)
            s.bind(2, event.seq)
            s.bind(3, event.draft.at)
            s.bind(4, event.draft.action)
            s.bind(5, event.draft.tokenID)
            s.bind(6, event.draft.client)
            s.bind(7, event.draft.aliasReference)
            s.bind(8, event.draft.result)
            s.bind(9, AuditEvent.encodeFacts(event.draft.facts))
            s.bind(10, event.previousMAC)
            s.bind(11, event.mac)
            try s.run()
        }
    }

    package func auditEvents(_ query: AuditQuery) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var texts: [(Int32, String)] = []
        var integers: [(Int32, Int64)] = []
        var next: Int32 = 1
        func text(_ column: String, _ value: String?) {
            guard let value else { return }
            conditions.append("\(column) = ?\(next)")
            texts.append((next, value))
            next += 1
        }
        func integer(_ condition: (Int32) -> String, _ value: Int64?) {
            guard let value else { return }
            conditions.append(condition(next))
            integers.append((next, value))
            next += 1
        }
        text("action", query.action)
        text("token_id", query.tokenID)
        text("result", query.result)
        text("alias_ref", query.aliasReference)
        integer({ "at >= ?\($0)" }, query.from)
        integer({ "at < ?\($0)" }, query.until)
        if let cursor = query.cursor {
            conditions.append("(at, chain, seq) < (?\(next), ?\(next + 1), ?\(next + 2))")
            integers.append((next, cursor.at))
            texts.append((next + 1, cursor.chain))
            integers.append((next + 2, cursor.seq))
            next += 3
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let s = try db.statement(
            "SELECT \(Self.auditColumns) FROM audit_events \(filter) ORDER BY at DESC, chain DESC, seq DESC LIMIT ?\(next)"
        )
        defer { s.finish() }
        for (index, value) in texts { s.bind(index, value) }
        for (index, value) in integers { s.bind(index, value) }
        s.bind(next, Int64(query.limit))
        return try readAuditEvents(s)
    }

    package func auditChains() throws(StoreError) -> [String] {
        let s = try db.statement("SELECT DISTINCT chain FROM audit_events ORDER BY chain")
        defer { s.finish() }
        var out: [String] = []
        while try s.step() { if let chain = s.text(0) { out.append(chain) } }
        return out
    }

    package func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [AuditEvent] {
        let s = try db.statement(
            "SELECT \(Self.auditColumns) FROM audit_events WHERE chain = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
        defer { s.finish() }
        s.bind(1, chain)
        s.bind(2, seq)
        s.bind(3, Int64(limit))
        return try readAuditEvents(s)
    }

    package func deleteAuditEvents(before at: Int64, limit: Int) throws(StoreError) -> [String: AuditTrim.Start] {
        // The chains with an old event, through the time index.
        let pick = try db.statement(
            "SELECT DISTINCT chain FROM (SELECT chain FROM audit_events WHERE at < ?1 ORDER BY at LIMIT ?2)")
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
            // Along the chain from its start, up to its first young event.
            let walk = try db.statement("SELECT seq, at FROM audit_events WHERE chain = ?1 ORDER BY seq LIMIT ?2")
            walk.bind(1, chain)
            walk.bind(2, Int64(budget))
            var last: Int64?
            do {
                defer { walk.finish() }
                while try walk.step() {
                    guard let seq = walk.int64(0), let time = walk.int64(1), time < at else { break }
                    last = seq
                    budget -= 1
                }
            }
            guard let last else { continue }
            let delete = try db.statement("DELETE FROM audit_events WHERE chain = ?1 AND seq <= ?2")
            delete.bind(1, chain)
            delete.bind(2, last)
            try delete.run()
            let first = try db.statement("SELECT min(seq) FROM audit_events WHERE chain = ?1")
            defer { first.finish() }
            first.bind(1, chain)
            let left = try first.step() ? first.int64(0) : nil
            starts[chain] = AuditTrim.Start(first: left ?? last + 1, gone: left == nil)
        }
        return starts
    }

    private func readAuditEvents(_ s: Statement) throws(StoreError) -> [AuditEvent] {
        var out: [AuditEvent] = []
        while try s.step() { out.append(try AuditEvent(row: s)) }
        return out
    }
}
