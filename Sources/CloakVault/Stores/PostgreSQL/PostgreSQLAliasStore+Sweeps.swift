/// The statements that reach rows by age or expiry: the sweeps', and one a request runs on a
/// table that grows with history. Each must go through an index, never scan the table (issue
/// 56): `SweepPlanTests` asks PostgreSQL for their generic plans, the ones a node keeps
/// (``PostgreSQLAliasStore/queryPlan(_:_:)``).
extension PostgreSQLAliasStore {
    enum Sweeps {
        /// Expired records, `$2` at a time, skipping rows another node holds
        /// (``PostgreSQLAliasStore/deleteExpired(now:limit:)``): `records_by_expiry`.
        static let expiredRecords = """
            DELETE FROM records WHERE id IN
              (SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= $1
               ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """
        /// Records a batch stored without an alias, noted before `$1`
        /// (``PostgreSQLAliasStore/deleteUnaliased(madeBefore:limit:)``): `unaliased_by_time`.
        static let unaliasedNotes = """
            SELECT record_id FROM unaliased WHERE created_at <= $1 ORDER BY created_at LIMIT $2
            """
        /// Uploads idle since before `$1`, `$2` at a time. The outer `WHERE` repeats the inner
        /// one (see ``PostgreSQLAliasStore/deleteAbandonedFiles(idleBefore:limit:)``): `files_idle`.
        static let abandonedFiles = """
            DELETE FROM files WHERE record_id IS NULL AND greatest(updated_at, created_at) < $1 AND upload_id IN
                (SELECT upload_id FROM files WHERE record_id IS NULL AND greatest(updated_at, created_at) < $1
                 LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING 1
            """
        /// When a bucket's oldest intent expires (a bucket's refusal, on a request's path):
        /// `records_by_bucket`.
        static let oldestIntent = "SELECT min(expires_at) FROM records WHERE bucket = $1"
    }

    /// The generic plan PostgreSQL keeps for `sql` with parameters of `parameters`' types (this
    /// connection plans every statement generically: see ``PostgreSQLConnection``), one line a
    /// node, e.g. `Index Scan using records_by_expiry on records`.
    func queryPlan(_ sql: String, _ parameters: [PostgreSQLConnection.Value]) throws(StoreError) -> [String] {
        try db.query("EXPLAIN " + sql, parameters).compactMap { $0.text(0) }
    }
}
