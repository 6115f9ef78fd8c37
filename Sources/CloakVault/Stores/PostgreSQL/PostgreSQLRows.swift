import CloakCore

/// Records read with their aliases, one row per alias (`alias, format, mac, seq` at `aliasAt`,
/// the record's columns at `recordAt`), gathered by a key; each record's aliases in `seq` order
/// (issue order) once read, so no statement needs a Sort.
struct AliasedRecords {
    private var gathered: [String: (record: StoredRecord, aliases: [(seq: Int64, alias: IssuedAlias)])] = [:]

    mutating func add(_ row: PostgreSQLConnection.Row, key: String, recordAt: Int, aliasAt: Int) throws(StoreError) {
        if gathered[key] == nil { gathered[key] = (try StoredRecord(row: ShiftedRow(row: row, by: recordAt)), []) }
        if let alias = IssuedAlias(row: ShiftedRow(row: row, by: aliasAt)) {
            gathered[key]?.aliases.append((row.int(aliasAt + 3) ?? 0, alias))
        }
    }

    var records: [String: StoredRecord] {
        gathered.mapValues { entry in
            var record = entry.record
            record.aliases = entry.aliases.sorted { $0.seq < $1.seq }.map(\.alias)
            return record
        }
    }
}
