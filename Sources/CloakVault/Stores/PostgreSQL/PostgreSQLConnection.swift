import CLibPQ
import Foundation

/// One libpq connection: the only owner of a `PGconn`. Used from one thread at a time (the
/// vault's executor). Parameters and results travel in binary (`bytea` as bytes, `int8`
/// big-endian), so no value is ever quoted into SQL text.
///
/// Errors name the operation and PostgreSQL's primary message only: its DETAIL (which quotes key
/// values, such as an alias) and the password never reach an error. libpq gets the URL's parts as
/// keywords, never the URL's text (``PostgresURL``), and any message of libpq's is scrubbed of the
/// password before it is shown.
final class PostgreSQLConnection {
    private var conn: OpaquePointer?
    private let url: PostgresURL
    /// Texts no message may show: the URL's password, and `PGPASSWORD` (libpq's fallback).
    private let secrets: [String]
    /// Rows changed by the last command.
    private(set) var changes = 0
    /// Statements sent and rows they returned or changed, since the connection was made
    /// (reconnections included): ``AliasStore/counters``.
    private(set) var counters = StoreCounters()
    /// Statements prepared on this connection, by SQL text: parsed and planned once, not per call
    /// (about half of PostgreSQL's CPU per alias in the benchmark). Forgotten on reconnect.
    private var prepared: [String: String] = [:]

    /// One result row, columns in binary format.
    struct Row {
        let columns: [[UInt8]?]
        func bytes(_ i: Int) -> [UInt8]? { columns[i] }
        func text(_ i: Int) -> String? { columns[i].map { String(decoding: $0, as: UTF8.self) } }
        func int(_ i: Int) -> Int64? {
            guard let b = columns[i] else { return nil }
            if b.count == 8 { return b.reduce(0) { $0 << 8 | Int64($1) } }
            if b.count == 4 { return Int64(Int32(bitPattern: b.reduce(0) { $0 << 8 | UInt32($1) })) }
            if b.count == 2 { return Int64(Int16(bitPattern: b.reduce(0) { $0 << 8 | UInt16($1) })) }  // smallint
            if b.count == 1 { return Int64(b[0]) }
            return nil
        }
    }

    /// Connects; `connectTimeout` bounds the TCP connect and authentication, and TCP keepalives and
    /// a user timeout make a dead server fail a query within about `failureTimeout` seconds instead
    /// of the kernel's minutes. The URL's own parameters (`connect_timeout=…`) win over these.
    init(url: PostgresURL, connectTimeout: Int = 5, failureTimeout: Int = 10) throws(StoreError) {
        self.url = url
        let secrets = [url.password, ProcessInfo.processInfo.environment["PGPASSWORD"]].compactMap { $0 }.filter {
            !$0.isEmpty
        }
        self.secrets = secrets
        conn = Self.connect(url, connectTimeout: connectTimeout, failureTimeout: failureTimeout)
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let why = conn.map { Self.scrubbed(Self.firstLine(PQerrorMessage($0)), secrets) } ?? "out of memory"
            if let conn { PQfinish(conn) }
            self.conn = nil
            throw .unavailable("cannot connect to PostgreSQL at \(url): \(why)")
        }
        self.failureTimeout = failureTimeout
        self.connectTimeout = connectTimeout
    }

    /// Parses `url` (``PostgresURL``) and connects.
    convenience init(url: String, connectTimeout: Int = 5, failureTimeout: Int = 10) throws(StoreError) {
        try self.init(
            url: PostgreSQLConnection.parse(url), connectTimeout: connectTimeout, failureTimeout: failureTimeout)
    }

    /// The parsed URL, or `unavailable` with the parser's message (which quotes none of the URL).
    static func parse(_ url: String) throws(StoreError) -> PostgresURL {
        do throws(PostgresURL.Error) {
            return try PostgresURL(parsing: url)
        } catch {
            throw .unavailable(error.description)
        }
    }

    private var failureTimeout = 10
    private var connectTimeout = 5

    deinit { if let conn { PQfinish(conn) } }

    /// Connects with keywords only (`expand_dbname` 0: no value is read as a URL or a connection
    /// string). Cloak's settings first; the URL's parts and parameters replace them.
    private static func connect(_ url: PostgresURL, connectTimeout: Int, failureTimeout: Int) -> OpaquePointer? {
        var settings: [String: String] = [
            "connect_timeout": String(connectTimeout), "application_name": "cloak",
            "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
            "tcp_user_timeout": String(failureTimeout * 1000),
            // Notices ("relation … already exists, skipping") would go to standard error.
            // Generic plans only: every statement is prepared once and its plan kept. Left to
            // choose, PostgreSQL planned the batch insert (PostgreSQLAliasStore+Batches) anew on
            // every run, a quarter of its CPU; the statements are key lookups and inserts whose
            // best plan does not depend on the values.
            // No Memoize: a lookup's loops are a few rows, and a Memoize node's hash table was
            // built at every statement's start (a reveal's plan spent a quarter of its CPU there).
            // No JIT: its compilation is paid at every execution, and a generic plan over tables
            // not yet analysed (a store just filled by an import) is costed past jit_above_cost.
            // An export's page of 500 records then spent 70 to 300 ms of the server's CPU in LLVM
            // for a read of 2 ms: counting 300,000 records took 42 s, writing them 6 s.
            "options":
                "-c client_min_messages=warning -c plan_cache_mode=force_generic_plan -c enable_memoize=off -c jit=off",
        ]
        settings.merge(url.keywords) { _, fromURL in fromURL }
        let pairs = settings.sorted { $0.key < $1.key }
        let keywords = pairs.map { strdup($0.key) }
        let values = pairs.map { strdup($0.value) }
        defer { (keywords + values).forEach { free($0) } }
        var k: [UnsafePointer<CChar>?] = keywords.map { UnsafePointer($0) } + [nil]
        var v: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        return PQconnectdbParams(&k, &v, 0)
    }

    /// Whether the connection is up.
    var isConnected: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Whether a transaction is open (or failed and not yet rolled back).
    var isInTransaction: Bool {
        guard let conn else { return false }
        let status = PQtransactionStatus(conn)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Reconnects after the server went away (the caller decides when, with backoff). A session
    /// whose settings (``setLockTimeout(milliseconds:)``) cannot be made is closed again: the
    /// next call tries anew.
    func reconnect() -> Bool {
        if let conn { PQfinish(conn) }
        prepared.removeAll()
        conn = Self.connect(url, connectTimeout: connectTimeout, failureTimeout: failureTimeout)
        guard isConnected else { return false }
        do {
            try applySessionSettings()
        } catch {
            disconnect()
            return false
        }
        return true
    }

    /// `lock_timeout` of this session and of every one ``reconnect()`` makes; nil: the server's.
    private var lockTimeoutMilliseconds: Int?

    /// A statement that waits longer than `milliseconds` for a lock another session holds fails
    /// (SQLSTATE 55P03, ``StoreError/transient(_:)``): set now, and again on every reconnect.
    /// When it cannot be set now, the connection is closed, so that no statement runs without
    /// it: the next call reconnects.
    func setLockTimeout(milliseconds: Int) {
        lockTimeoutMilliseconds = max(milliseconds, 1)
        guard isConnected else { return }
        do {
            try applySessionSettings()
        } catch {
            disconnect()
        }
    }

    /// Sets what the session needs beyond its connection options (a `SET` outside any
    /// transaction: the session keeps it). Not through ``execute(_:)``, which a reading batch
    /// limits to `SELECT`: a reconnect can happen in one.
    private func applySessionSettings() throws(StoreError) {
        guard let milliseconds = lockTimeoutMilliseconds else { return }
        guard let conn else { throw .unavailable("not connected to PostgreSQL") }
        let result = PQexec(conn, "SET lock_timeout = \(milliseconds)")
        defer { PQclear(result) }
        try check(result, "set lock_timeout")
    }

    private func disconnect() {
        if let conn { PQfinish(conn) }
        conn = nil
        prepared.removeAll()
    }

    /// Set while the store reads without a transaction: only `SELECT` statements run.
    var readsOnly = false

    private func admit(_ sql: String) throws(StoreError) {
        if readsOnly && !sql.hasPrefix("SELECT") { throw .unavailable("a write was refused in a reading batch") }
    }

    /// Runs statements without parameters or results (schema, transactions).
    func execute(_ sql: String) throws(StoreError) { try execute(sql, expecting: nil) }

    /// Runs `sql`; with `tag`, its command status must be that (else a transient error: the
    /// work was not done).
    func execute(_ sql: String, expecting tag: String?) throws(StoreError) {
        guard let conn else { throw .unavailable("not connected to PostgreSQL") }
        try admit(sql)
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        counters.statements += 1
        try check(result, "execute")
        if let tag, let status = PQcmdStatus(result).map({ String(cString: $0) }), status != tag {
            throw .transient("PostgreSQL answered \(sql) with \(status)")
        }
    }

    /// Runs one statement with binary parameters; returns its rows.
    @discardableResult
    func query(_ sql: String, _ parameters: [Value] = []) throws(StoreError) -> [Row] {
        guard let conn else { throw .unavailable("not connected to PostgreSQL") }
        try admit(sql)
        let result = try Self.withParameters(parameters) { types, values, lengths, formats throws(StoreError) in
            let name = try statementName(sql, types: types)
            return PQexecPrepared(conn, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        counters.statements += 1
        try check(result, "query")
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        counters.rows += changes
        return result.map(Self.rows(of:)) ?? []
    }

    /// The prepared statement for `sql` (prepared now when new).
    private func statementName(_ sql: String, types: [Oid]) throws(StoreError) -> String {
        if let name = prepared[sql] { return name }
        guard let conn else { throw .unavailable("not connected to PostgreSQL") }
        let name = "cloak_\(prepared.count)"
        let result = PQprepare(conn, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, "prepare")
        prepared[sql] = name
        return name
    }

    /// Turns a failed result into a ``StoreError``: a unique violation on an alias is
    /// `aliasTaken`, on a fingerprint `fingerprintTaken`; a full disk `full`; anything else
    /// `unavailable` with the operation and PostgreSQL's primary message.
    private func check(_ result: OpaquePointer?, _ what: String) throws(StoreError) {
        guard let result else {
            throw .unavailable("\(what): \(conn.map { scrub(Self.firstLine(PQerrorMessage($0))) } ?? "no connection")")
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY { return }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) } ?? ""
        let primary = scrub(
            PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? conn.map { Self.firstLine(PQerrorMessage($0)) } ?? "failed")
        switch state {
        case "23505" where constraint == "records_fingerprint_key" || constraint == "aliases_record_format_key":
            throw .fingerprintTaken
        case "23505": throw .aliasTaken
        case "53100": throw .full
        // 55P03: a lock wait past lock_timeout (``setLockTimeout(milliseconds:)``), most often a
        // deadlock between nodes that deadlock_timeout has not found yet, or a writer that stopped
        // with rows locked; the executor handles it as it does a deadlock.
        case "40P01", "40001", "55P03": throw .transient("\(primary) (SQLSTATE \(state))")
        default: throw .unavailable("\(what): \(primary)\(state.isEmpty ? "" : " (SQLSTATE \(state))")")
        }
    }

    private static func firstLine(_ message: UnsafeMutablePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        return String(cString: message).split(separator: "\n").first.map(String.init) ?? "unknown error"
    }

    /// `message` with every occurrence of a secret replaced by `***`. libpq does not quote the
    /// password in its messages today; this makes sure no version of it (nor the server) can.
    /// `message` as it may be shown: a message that holds a secret anywhere is replaced whole
    /// (masking the secret in place would show where a short one's letters stood).
    static func scrubbed(_ message: String, _ secrets: [String]) -> String {
        guard secrets.contains(where: { !$0.isEmpty && message.contains($0) }) else { return message }
        return "the PostgreSQL server's message is not shown: it contained the store's password"
    }

    private func scrub(_ message: String) -> String { Self.scrubbed(message, secrets) }
}
