import CSQLite

/// One SQLite connection and its prepared statements. Used from one thread at a time.
final class SQLiteConnection {
    private let handle: OpaquePointer
    /// Prepared statements by their text, searched in order: a store has a few dozen, always
    /// passed as the same stored strings, so comparing lengths and then the strings (the same
    /// storage compares equal at once) is cheaper than hashing a few hundred bytes of SQL for a
    /// dictionary, four times a reveal (callgrind).
    private var statements: [(sql: String, length: Int, handle: OpaquePointer)] = []
    /// Statements run and rows stepped over since the connection opened (``counters``).
    fileprivate(set) var statementsRun = 0
    fileprivate(set) var rowsRead = 0

    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            if let db { sqlite3_close(db) }
            throw .unavailable("cannot open the SQLite database (code \(rc))")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        sqlite3_extended_result_codes(db, 1)
    }

    /// Whether SQLite opened the database read-only (its file was not writable).
    var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    deinit {
        for s in statements { sqlite3_finalize(s.handle) }
        sqlite3_close(handle)
    }

    func error(_ rc: Int32, _ what: String) -> StoreError {
        // Only a duplicate key means "taken, try another alias"; other constraint failures are faults.
        // _PRIMARYKEY, _UNIQUE
        if rc == SQLITE_CONSTRAINT | (6 << 8) || rc == SQLITE_CONSTRAINT | (8 << 8) { return .aliasTaken }
        switch rc & 0xFF {
        case SQLITE_FULL: return .full
        // The extended code tells which I/O step failed (10 | n << 8: read, write, fsync, lock, shm...).
        default: return .unavailable("\(what): \(String(cString: sqlite3_errstr(rc))) (SQLite code \(rc))")
        }
    }

    /// Runs statements without results (schema, pragmas, transactions).
    func execute(_ sql: String) throws(StoreError) {
        statementsRun += 1
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        // Schema and pragma text, never a value (values are bound), so it may be named.
        guard rc == SQLITE_OK else { throw error(rc, "execute \(sql.prefix(while: { $0 != "\n" }).prefix(48))") }
    }

    /// Runs one statement without results through the statement cache: transaction control
    /// runs for every batch and request, and `sqlite3_exec` parses the text again each time
    /// (callgrind: `BEGIN IMMEDIATE` cost more than the insert it opened).
    func run(_ sql: String) throws(StoreError) {
        let s = try statement(sql)
        let rc = sqlite3_step(s.handle)
        sqlite3_reset(s.handle)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw error(rc, sql) }  // transaction control: no values
    }

    /// A cached prepared statement, reset and with its bindings cleared.
    func statement(_ sql: String) throws(StoreError) -> Statement {
        statementsRun += 1
        let length = sql.utf8.count
        for cached in statements where cached.length == length && cached.sql == sql {
            sqlite3_reset(cached.handle)
            sqlite3_clear_bindings(cached.handle)
            return Statement(handle: cached.handle, connection: self)
        }
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == SQLITE_OK, let s else { throw error(rc, "prepare") }
        statements.append((sql, length, s))
        return Statement(handle: s, connection: self)
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    /// The row the last insert on this connection wrote (not `RETURNING`: SQLite keeps a
    /// statement's returned rows in a table of its own, opened and closed each time).
    var lastInsertedRow: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Statements run (each use of a prepared one, each ``execute(_:)``), and rows read or
    /// changed (SQLite's count of rows its writes changed, triggers' included), since the
    /// connection opened.
    var counters: StoreCounters {
        StoreCounters(statements: statementsRun, rows: rowsRead + Int(sqlite3_total_changes(handle)))
    }

    /// Whether `table` has `column` (schema upgrades).
    func columnExists(table: String, column: String) throws(StoreError) -> Bool {
        let s = try statement("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")
        s.bind(1, table)
        s.bind(2, column)
        defer { s.finish() }
        return try s.step()
    }

    /// True outside a transaction: SQLite may have rolled one back by itself (full disk, I/O error).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }
}

/// A prepared statement being bound and stepped.
struct Statement {
    let handle: OpaquePointer
    let connection: SQLiteConnection

    /// Binds text with its exact byte length: a NUL inside the text is part of it, never its end
    /// (bound with length -1, `alias%00junk` would be looked up as `alias`).
    func bind(_ index: Int32, _ text: String?) {
        guard let text else { sqlite3_bind_null(handle, index); return }
        // A NUL-terminated copy whose length is given explicitly, so embedded NULs are kept.
        let length = Int32(text.utf8.count)  // O(1) on a native string: no copy to count it
        text.withCString { chars in
            _ = sqlite3_bind_text(handle, index, chars, length, CSQLite_transient())
        }
    }

    func bind(_ index: Int32, _ blob: [UInt8]?) {
        guard let blob else { sqlite3_bind_null(handle, index); return }
        blob.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(
                handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                CSQLite_transient())
        }
    }

    func bind(_ index: Int32, _ value: Int64?) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        sqlite3_bind_int64(handle, index, value)
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW:
            connection.rowsRead += 1
            return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw connection.error(rc, "step")
        }
    }

    /// Steps to completion (for writes).
    func run() throws(StoreError) {
        while try step() {}
    }

    /// Ends a read early so the statement holds no lock until its next use.
    func finish() { sqlite3_reset(handle) }

    func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: p)
    }

    func blob(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let p = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }

    func int64(_ column: Int32) -> Int64? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        return sqlite3_column_int64(handle, column)
    }
}

extension Statement: RecordRow {
    func text(at column: Int) -> String? { text(Int32(column)) }
    func bytes(at column: Int) -> [UInt8]? { blob(Int32(column)) }
    func integer(at column: Int) -> Int64? { int64(Int32(column)) }
}
