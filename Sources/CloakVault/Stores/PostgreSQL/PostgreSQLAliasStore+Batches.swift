import CloakCore
import CloakCrypto

extension PostgreSQLAliasStore {
    /// A round trip costs PostgreSQL more than the rows it writes (each statement is a protocol
    /// exchange, a snapshot and an executor start): records go in batches.
    package var batchesNewRecords: Bool { true }

    /// Every write's record and alias as one column array each, then one statement: insert the
    /// records, the aliases of those inserted, and read back the record each skipped write's
    /// fingerprint already has, with its aliases (the statement's snapshot is from before its
    /// inserts, so a record it stored itself is never read back). `$17`: take a transaction id
    /// even when nothing is written (``AliasStore/forceDurableCommit()``).
    ///
    /// - A record stored without its alias (``NewRecordOutcome/storedWithoutAlias``: the alias
    ///   was another record's) is committed before the vault gives it another, in the batch's
    ///   own transaction; should that never happen (the request failed, the node died), nothing
    ///   could find the record but the next create of its value, nor ever delete it. So it is
    ///   noted in `unaliased`, in this statement, and the expiry sweep removes it if it still has
    ///   no alias a minute later (``deleteUnaliased(madeBefore:limit:)``).
    /// - `ON CONFLICT` names one key each: a record's id and an alias's record are new, so the
    ///   other unique keys cannot conflict, and PostgreSQL checks one index ahead instead of two.
    /// - The rows come sorted by fingerprint (``commitNewRecords(_:durable:)``), and are inserted
    ///   in that order: two nodes writing overlapping batches then wait on each other's rows in
    ///   one order, not in opposite ones (a deadlock).
    /// - The lookups are LATERAL with a LIMIT, so each stays an index scan whatever the
    ///   statistics said when the plan was made (plans are generic and kept: a plan made while
    ///   the tables were empty scanned all aliases for every row).
    static let insertBatch = """
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bytea[], $5::bytea[], $6::bytea[],
                $7::text[], $8::text[], $9::int8[], $10::int8[], $11::int8[], $12::bytea[], $13::text[],
                $14::text[], $15::text[], $16::bytea[])
                WITH ORDINALITY AS t(id, fingerprint, key_id, nonce, ciphertext, tag, storage, classifiers,
                    created_at, expires_at, intent, bucket, metadata, alias, format, mac, n)
        ), stored AS (
            INSERT INTO records (\(StoredRecord.columns))
            SELECT id, fingerprint, key_id, nonce, ciphertext, tag, storage, classifiers, created_at, expires_at,
                intent::smallint, bucket, metadata
            FROM input
            ON CONFLICT (fingerprint) DO NOTHING RETURNING id, created_at
        ), aliased AS (
            INSERT INTO aliases (alias, record_id, format, mac)
            SELECT input.alias, input.id, input.format, input.mac FROM input JOIN stored ON stored.id = input.id
            ON CONFLICT (alias) DO NOTHING RETURNING record_id
        ), noted AS (
            INSERT INTO unaliased (record_id, created_at)
            SELECT stored.id, stored.created_at FROM stored LEFT JOIN aliased ON aliased.record_id = stored.id
            WHERE aliased.record_id IS NULL
        )
        SELECT input.n, stored.id IS NOT NULL, aliased.record_id IS NOT NULL,
            CASE WHEN $17 THEN txid_current() END,
            \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
            a.alias, a.format, a.mac, a.seq
        FROM input
        LEFT JOIN stored ON stored.id = input.id
        LEFT JOIN aliased ON aliased.record_id = input.id
        LEFT JOIN LATERAL (
            SELECT * FROM records WHERE stored.id IS NULL AND fingerprint = input.fingerprint LIMIT 1
        ) r ON true
        LEFT JOIN LATERAL (SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id LIMIT 1000) a ON true
        """

    /// One round trip: ``insertBatch`` alone, outside any transaction, is its own transaction,
    /// committed (and flushed) before its answer is read. Failing, it wrote nothing.
    package func commitNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        guard !writes.isEmpty else { return [] }
        try connected()
        return try runInsertBatch(writes, durable: durable)
    }

    /// ``insertBatch`` in the transaction under way: one round trip, committed with it.
    package func insertNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        guard !writes.isEmpty else { return [] }
        return try runInsertBatch(writes, durable: durable)
    }

    private func runInsertBatch(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        // In fingerprint order (see insertBatch); `order[i]` is the write sent i-th.
        let order = writes.indices.sorted { a, b in
            Self.precedes(writes[a].record.fingerprint, writes[b].record.fingerprint)
        }
        let writes = order.map { writes[$0] }
        let records = writes.map(\.record)
        let parameters: [PostgreSQLConnection.Value] = [
            .texts(records.map(\.id)), .byteStrings(records.map(\.fingerprint)), .texts(records.map(\.keyID)),
            .byteStrings(records.map(\.sealed.nonce)), .byteStrings(records.map(\.sealed.ciphertext)),
            .byteStrings(records.map(\.sealed.tag)), .texts(records.map(\.storage.rawValue)),
            .texts(records.map { $0.classifiers.joined(separator: ",") }), .ints(records.map(\.createdAt)),
            .ints(records.map(\.expiresAt)), .ints(records.map { $0.intent ? 1 : 0 }),
            .byteStrings(records.map(\.bucket)), .texts(records.map { RevealedRecord.encodeMetadata($0.metadata) }),
            .texts(writes.map(\.alias.alias)), .texts(writes.map(\.alias.storedFormat)),
            .byteStrings(writes.map(\.alias.mac)),
        ]
        let rows: [PostgreSQLConnection.Row]
        do throws(StoreError) {
            rows = try db.query(Self.insertBatch, parameters + [.bool(durable)])
        } catch .fingerprintTaken, .aliasTaken {
            // Only a record id's key can raise one (ON CONFLICT names the others); ids carry 72
            // random bits, so this is a broken clock or generator, and nothing was written.
            throw .unavailable("a new record's id is taken")
        }
        let sent = try Self.outcomes(rows, count: writes.count)
        var outcomes = sent
        for (position, index) in order.enumerated() { outcomes[index] = sent[position] }
        return outcomes
    }

    /// Byte order, as PostgreSQL compares `bytea`; no fingerprint last.
    private static func precedes(_ a: [UInt8]?, _ b: [UInt8]?) -> Bool {
        guard let a else { return false }
        guard let b else { return true }
        return a.lexicographicallyPrecedes(b)
    }

    /// Reads ``insertBatch``'s rows: one per write, or one per alias of the record found for it
    /// (in no order: ``AliasedRecords`` puts the aliases in issue order).
    private static func outcomes(_ rows: [PostgreSQLConnection.Row], count: Int) throws(StoreError)
        -> [NewRecordOutcome]
    {
        var outcomes = [NewRecordOutcome?](repeating: nil, count: count)
        var found = AliasedRecords()
        for row in rows {
            guard let n = row.int(0), n >= 1, n <= count else { throw .unavailable("a batch answer is out of order") }
            let index = Int(n - 1)
            if row.int(1) == 1 {
                outcomes[index] = row.int(2) == 1 ? .stored : .storedWithoutAlias
            } else if row.bytes(4) == nil {
                outcomes[index] = .notStored
            } else {
                try found.add(row, key: String(index), recordAt: 4, aliasAt: 17)
            }
        }
        for (key, record) in found.records {
            if let index = Int(key) { outcomes[index] = .found(record) }
        }
        var out: [NewRecordOutcome] = []
        out.reserveCapacity(count)
        for outcome in outcomes {
            guard let outcome else { throw .unavailable("a batch answer is missing a row") }
            out.append(outcome)
        }
        return out
    }
}
