import CloakCore
import CloakCrypto

extension PostgreSQLAliasStore {
    /// A round trip costs PostgreSQL more than the rows it writes (each statement is a protocol
    /// exchange, a snapshot and an executor start): records go in batches.
    package var batchesNewRecords: Bool { true }

    /// Every write's record and alias as one column array each, then one statement: insert the
    /// records (`ON CONFLICT DO NOTHING`), the aliases of those inserted, and read back the
    /// record each skipped write's fingerprint already has, with its aliases (the statement's
    /// snapshot is from before its inserts, so a record it stored itself is never read back).
    /// Rows are inserted in fingerprint order and aliases in alias order, so two nodes writing
    /// overlapping batches take their index locks in one order, not in opposite ones (a deadlock).
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
            FROM input ORDER BY fingerprint, id
            ON CONFLICT DO NOTHING RETURNING id
        ), aliased AS (
            INSERT INTO aliases (alias, record_id, format, mac)
            SELECT input.alias, input.id, input.format, input.mac FROM input JOIN stored ON stored.id = input.id
            ORDER BY input.alias
            ON CONFLICT DO NOTHING RETURNING record_id
        )
        SELECT input.n, stored.id IS NOT NULL, aliased.record_id IS NOT NULL,
            \(StoredRecord.columns.split(separator: ", ").map { "r.\($0)" }.joined(separator: ", ")),
            a.alias, a.format, a.mac
        FROM input
        LEFT JOIN stored ON stored.id = input.id
        LEFT JOIN aliased ON aliased.record_id = input.id
        LEFT JOIN LATERAL (
            SELECT * FROM records WHERE stored.id IS NULL AND fingerprint = input.fingerprint LIMIT 1
        ) r ON true
        LEFT JOIN LATERAL (
            SELECT alias, format, mac, seq FROM aliases WHERE record_id = r.id ORDER BY seq LIMIT 1000
        ) a ON true
        ORDER BY input.n, a.seq
        """

    /// One round trip: `BEGIN`, ``insertBatch``, `COMMIT` in one pipeline.
    package func commitNewRecords(_ writes: [NewRecordWrite], durable: Bool) throws(StoreError) -> [NewRecordOutcome] {
        guard !writes.isEmpty else { return [] }
        try connected()
        let records = writes.map(\.record)
        let batch = PostgreSQLConnection.Statement(
            sql: Self.insertBatch,
            parameters: [
                .texts(records.map(\.id)), .byteStrings(records.map(\.fingerprint)), .texts(records.map(\.keyID)),
                .byteStrings(records.map(\.sealed.nonce)), .byteStrings(records.map(\.sealed.ciphertext)),
                .byteStrings(records.map(\.sealed.tag)), .texts(records.map(\.storage.rawValue)),
                .texts(records.map { $0.classifiers.joined(separator: ",") }), .ints(records.map(\.createdAt)),
                .ints(records.map(\.expiresAt)), .ints(records.map { $0.intent ? 1 : 0 }),
                .byteStrings(records.map(\.bucket)), .texts(records.map { RevealedRecord.encodeMetadata($0.metadata) }),
                .texts(writes.map(\.alias.alias)), .texts(writes.map(\.alias.storedFormat)),
                .byteStrings(writes.map(\.alias.mac)),
            ])
        var statements = [PostgreSQLConnection.Statement(sql: "BEGIN"), batch]
        if durable { statements.append(.init(sql: "SELECT txid_current()")) }
        statements.append(.init(sql: "COMMIT"))
        let answers: [[PostgreSQLConnection.Row]]
        do throws(StoreError) {
            answers = try db.pipeline(statements)
        } catch {
            // A statement failed: the server skipped the rest, COMMIT included.
            rollback()
            throw error
        }
        return try Self.outcomes(answers[1], count: writes.count)
    }

    /// Reads ``insertBatch``'s rows: one per write, or one per alias of the record found for it.
    private static func outcomes(_ rows: [PostgreSQLConnection.Row], count: Int) throws(StoreError)
        -> [NewRecordOutcome]
    {
        var outcomes = [NewRecordOutcome?](repeating: nil, count: count)
        for row in rows {
            guard let n = row.int(0), n >= 1, n <= count else { throw .unavailable("a batch answer is out of order") }
            let index = Int(n - 1)
            if row.int(1) == 1 {
                outcomes[index] = row.int(2) == 1 ? .stored : .storedWithoutAlias
            } else if row.bytes(3) == nil {
                outcomes[index] = .notStored
            } else {
                var record: StoredRecord
                if case let .found(seen) = outcomes[index] {
                    record = seen
                } else {
                    record = try StoredRecord(row: Shifted(row: row, by: 3))
                }
                if let alias = IssuedAlias(row: Shifted(row: row, by: 16)) { record.aliases.append(alias) }
                outcomes[index] = .found(record)
            }
        }
        return try outcomes.map { outcome throws(StoreError) in
            guard let outcome else { throw .unavailable("a batch answer is missing a row") }
            return outcome
        }
    }

    /// A row's columns from `by` on, as ``RecordRow``.
    private struct Shifted: RecordRow {
        let row: PostgreSQLConnection.Row
        let by: Int
        func text(at column: Int) -> String? { row.text(by + column) }
        func bytes(at column: Int) -> [UInt8]? { row.bytes(by + column) }
        func integer(at column: Int) -> Int64? { row.int(by + column) }
    }
}
