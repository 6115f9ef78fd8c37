import CloakCore
import CloakCrypto
import Foundation

/// The shared store: PostgreSQL through libpq, for several Cloak nodes on one (replicated)
/// database. A batch's new records are one statement, its own transaction
/// (``commitNewRecords(_:durable:)``); the rest of an executor batch is one transaction, each
/// request in a savepoint.
///
/// - Races between nodes are decided by unique constraints: an alias issued elsewhere is
///   ``StoreError/aliasTaken`` (the vault tries its next candidate); a value or alias format
///   stored elsewhere first is ``StoreError/fingerprintTaken`` (the vault reads the record again
///   and uses it). Inserts say `ON CONFLICT DO NOTHING`, so a lost race is no error: it never
///   aborts the batch and never puts a key value into the server's log.
/// - A statement waits for another session's locks at most a third of `vault.store_timeout_ms`
///   (`lock_timeout`, set by the executor: ``LockWaitBounded``). A lock timeout is
///   ``StoreError/transient(_:)``, as a deadlock is: the executor rolls its whole transaction
///   back and runs it once more (``VaultExecutor``).
/// - The schema is versioned (`cloak_schema`) and migrated at open under a transaction-scoped
///   advisory lock, so nodes starting together do not race.
/// - While the server is unreachable every call fails at once with `unavailable` (503 upstream
///   of here); the connection is re-made on use with a backoff from 0.25 s to 2 s. With a
///   multi-host URL (`postgres://u@h1,h2/db?target_session_attrs=read-write`) libpq tries each
///   host in turn and keeps the writable one: after a failover, the promoted standby.
package final class PostgreSQLAliasStore: AliasStore {
    let db: PostgreSQLConnection
    private var backoff: TimeInterval = 0.25
    private var nextReconnect = Date.distantPast

    /// Connects to `url` (`postgres://user:password@host:port/db?sslmode=…`, read by
    /// ``PostgresURL``: a URL it refuses is `unavailable` with a message that quotes none of it)
    /// and migrates the schema.
    package init(url: String) throws(StoreError) {
        db = try PostgreSQLConnection(url: url)
        try migrate()
    }

    /// Connects with the parts of a parsed URL (libpq never sees the URL's text) and migrates the schema.
    package init(url: PostgresURL) throws(StoreError) {
        db = try PostgreSQLConnection(url: url)
        try migrate()
    }

    /// Makes sure there is a connection: reconnects when it was lost, at most once per backoff step.
    func connected() throws(StoreError) {
        if db.isConnected { return }
        guard Date() >= nextReconnect else { throw .unavailable("PostgreSQL is unreachable; reconnecting") }
        if db.reconnect() {
            backoff = 0.25
            return
        }
        nextReconnect = Date().addingTimeInterval(backoff)
        // At most 2 s (what a refused caller is told to wait): a promoted standby is found soon
        // after it takes writes.
        backoff = min(backoff * 2, TimeInterval(StoreError.retryAfterSeconds))
        throw .unavailable("PostgreSQL is unreachable; reconnecting")
    }

    /// Other nodes write to the same server.
    package var isSoleWriter: Bool { false }

    package var counters: StoreCounters { db.counters }

    package func begin() throws(StoreError) {
        try connected()
        // READ COMMITTED whatever the database's default: the lock-then-delete steps
        // (deleteAlias, the unaliased sweep) rely on a snapshot per statement.
        try db.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    }
    /// No transaction: each read is one statement with its own snapshot (a reveal of many
    /// aliases included: ``records(aliases:)``), so a reading batch costs one round trip per
    /// statement instead of two more for `BEGIN READ ONLY` and `COMMIT`. Nothing a reading job
    /// does needs two statements to agree. The connection refuses any statement but a `SELECT`
    /// until ``commit()``, as a read-only transaction would refuse a write.
    package func beginReading() throws(StoreError) {
        try connected()
        db.readsOnly = true
    }
    package var failedStatementAbortsTransaction: Bool { true }

    package func commit() throws(StoreError) {
        if db.readsOnly {
            db.readsOnly = false
            return
        }
        // A transaction a failed statement aborted answers COMMIT with ROLLBACK, and no error.
        try db.execute("COMMIT", expecting: "COMMIT")
    }
    package func rollback() {
        if db.readsOnly {
            db.readsOnly = false
            return
        }
        if db.isConnected { try? db.execute("ROLLBACK") }
    }
    package func savepoint() throws(StoreError) { try db.execute("SAVEPOINT request") }
    package func releaseSavepoint() throws(StoreError) { try db.execute("RELEASE SAVEPOINT request") }
    package var isInTransaction: Bool { db.readsOnly || db.isInTransaction }

    package func rollbackToSavepoint() {
        try? db.execute("ROLLBACK TO SAVEPOINT request")
        try? db.execute("RELEASE SAVEPOINT request")
    }

    /// Gives the transaction an id: its commit then writes a commit record and waits for the WAL
    /// flush, as a commit that stored a record does (no row is written, so nodes do not queue on
    /// one another).
    package func forceDurableCommit() throws(StoreError) {
        try db.query("SELECT txid_current()")
    }

    /// Answers, and takes writes: a hot standby (`pg_is_in_recovery()`) or a session that is
    /// read-only (`default_transaction_read_only`, a database an operator froze) is not ready
    /// (issue 55, item 9): every write would fail there.
    /// The server's data directory (`SHOW data_directory`: a superuser or a member of
    /// `pg_read_all_settings` may read it), nil when the session may not.
    package func dataDirectory() -> String? {
        guard (try? connected()) != nil else { return nil }
        return (try? db.query("SELECT current_setting('data_directory', true)"))?.first?.text(0)
    }

    package func ping() throws(StoreError) {
        try connected()
        let row = try db.query("SELECT pg_is_in_recovery()::text, current_setting('transaction_read_only')").first
        if row?.text(0) == "true" { throw .unavailable("the PostgreSQL server is a standby (read-only)") }
        if row?.text(1) == "on" { throw .unavailable("the PostgreSQL session is read-only") }
    }
}

/// Another node's rows can hold a statement up (its uncommitted insert of the same value, its
/// backend stopped with locks held): the executor bounds the wait below the store's time limit.
extension PostgreSQLAliasStore: LockWaitBounded {
    func boundLockWaits(milliseconds: Int) { db.setLockTimeout(milliseconds: milliseconds) }
}
