/// The audit events (issue 59), as ``SQLiteAliasStore`` keeps them: keyed by chain and place, read
/// newest first through the time index or an alias reference's own.
extension PostgreSQLAliasStore {
    static let auditSchema = """
        CREATE TABLE audit_events (
            chain text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            at bigint NOT NULL,
            action text NOT NULL,
            token_id text NOT NULL,
            client text NOT NULL,
            alias_ref text,
            result text NOT NULL,
            facts text NOT NULL,
            prev bytea NOT NULL,
            mac bytea NOT NULL,
            PRIMARY KEY (chain, seq)
        );
        CREATE INDEX audit_by_time ON audit_events (at, chain, seq);
        CREATE INDEX audit_by_alias ON audit_events (alias_ref, at, chain, seq) WHERE alias_ref IS NOT NULL;
        """

    static let auditColumns = AuditEvent.columns

    package func appendAuditEvents(_ events: [AuditEvent]) throws(StoreError) {
        guard !events.isEmpty else { return }
        // One statement for the batch's events: arrays, unnested.
        try db.query(
            """
            INSERT INTO audit_events (\(Self.auditColumns))
            SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[],
                                 $8::text[], $9::text[], $10::bytea[], $11::bytea[])
            """,
            [
                .texts(events.map(\.chain)), .ints(events.map(\.seq)), .ints(events.map(\.draft.at)),
                .texts(events.map(\.draft.action)), .texts(events.map(\.draft.tokenID)),
                .texts(events.map(\.draft.client)), .texts(events.map(\.draft.aliasReference)),
                .texts(events.map(\.draft.result)), .texts(events.map { AuditEvent.encodeFacts($0.draft.facts) }),
                .byteStrings(events.map(\.previousMAC)), .byteStrings(events.map(\.mac)),
            ])
    }

    package func auditEvents(_ query: AuditQuery) throws(StoreError) -> [AuditEvent] {
        var conditions: [String] = []
        var values: [PostgreSQLConnection.Value] = []
        func add(_ condition: (Int) -> String, _ value: PostgreSQLConnection.Value?) {
            guard let value else { return }
            values.append(value)
            conditions.append(condition(values.count))
        }
        add({ "action = $\($0)" }, query.action.map { .text($0) })
        add({ "token_id = $\($0)" }, query.tokenID.map { .text($0) })
        add({ "result = $\($0)" }, query.result.map { .text($0) })
        add({ "alias_ref = $\($0)" }, query.aliasReference.map { .text($0) })
        add({ "at >= $\($0)" }, query.from.map { .int($0) })
        add({ "at < $\($0)" }, query.until.map { .int($0) })
        if let cursor = query.cursor {
            values += [.int(cursor.at), .text(cursor.chain), .int(cursor.seq)]
            let n = values.count
            conditions.append("(at, chain, seq) < ($\(n - 2), $\(n - 1), $\(n))")
        }
        values.append(.int(Int64(query.limit)))
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try readAuditEvents(
            db.query(
                "SELECT \(Self.auditColumns) FROM audit_events \(filter) ORDER BY at DESC, chain DESC, seq DESC LIMIT $\(values.count)",
                values))
    }

    package func auditChains() throws(StoreError) -> [String] {
        try db.query("SELECT DISTINCT chain FROM audit_events ORDER BY chain").compactMap { $0.text(0) }
    }

    package func auditChain(_ chain: String, after seq: Int64, limit: Int) throws(StoreError) -> [AuditEvent] {
        try readAuditEvents(
            db.query(
                "SELECT \(Self.auditColumns) FROM audit_events WHERE chain = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                [.text(chain), .int(seq), .int(Int64(limit))]))
    }

    /// The advisory lock of the audit sweep: one node at a time ("cloak" and 1).
    static let auditSweepLock: Int64 = 0x636C_6F61_6B01

    package func deleteAuditEvents(before at: Int64, limit: Int) throws(StoreError) -> [String: AuditTrim.Start] {
        guard
            try db.query("SELECT pg_try_advisory_xact_lock($1)::int::int8", [.int(Self.auditSweepLock)]).first?.int(0)
                == 1
        else { return [:] }
        let chains = try db.query(
            "SELECT DISTINCT chain FROM (SELECT chain FROM audit_events WHERE at < $1 ORDER BY at LIMIT $2) c",
            [.int(at), .int(Int64(limit))]
        ).compactMap { $0.text(0) }
        var budget = limit
        var starts: [String: AuditTrim.Start] = [:]
        for chain in chains.sorted() where budget > 0 {
            var last: Int64?
            for row in try db.query(
                "SELECT seq, at FROM audit_events WHERE chain = $1 ORDER BY seq LIMIT $2",
                [.text(chain), .int(Int64(budget))])
            {
                guard let seq = row.int(0), let time = row.int(1), time < at else { break }
                last = seq
                budget -= 1
            }
            guard let last else { continue }
            try db.query("DELETE FROM audit_events WHERE chain = $1 AND seq <= $2", [.text(chain), .int(last)])
            let left = try db.query("SELECT min(seq) FROM audit_events WHERE chain = $1", [.text(chain)]).first?.int(0)
            starts[chain] = AuditTrim.Start(first: left ?? last + 1, gone: left == nil)
        }
        return starts
    }

    private func readAuditEvents(_ rows: [PostgreSQLConnection.Row]) throws(StoreError) -> [AuditEvent] {
        var out: [AuditEvent] = []
        out.reserveCapacity(rows.count)
        for row in rows { out.append(try AuditEvent(row: row)) }
        return out
    }
}
