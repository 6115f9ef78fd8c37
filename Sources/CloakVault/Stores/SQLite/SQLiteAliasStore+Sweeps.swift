/// The statements that reach rows by age or expiry: the sweeps', and one a request runs on a
/// table that grows with history. Each must go through an index, never scan the table (issue
/// 56): `SweepPlanTests` asks SQLite for their plans (``SQLiteAliasStore/queryPlan(_:)``).
extension SQLiteAliasStore {
    enum Sweeps {
        /// Expired records, `?2` at a time (``SQLiteAliasStore/deleteExpired(now:limit:)``):
        /// `records_by_expiry`.
        static let expiredRecords = """
            DELETE FROM records WHERE id IN
              (SELECT id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?1 LIMIT ?2)
            """
        /// Uploads idle since before `?1`, `?2` at a time
        /// (``SQLiteAliasStore/deleteAbandonedFiles(idleBefore:limit:)``): `files_idle`.
        static let abandonedFiles = """
            DELETE FROM files WHERE record_id IS NULL AND max(updated_at, created_at) < ?1 AND upload_id IN
                (SELECT upload_id FROM files WHERE record_id IS NULL AND max(updated_at, created_at) < ?1 LIMIT ?2)
            """
        /// When a bucket's oldest intent expires (a bucket's refusal, on a request's path):
        /// `records_by_bucket`.
        static let oldestIntent = "SELECT min(expires_at) FROM records WHERE bucket = ?1"

        /// Every statement above, by what it does.
        static let all: KeyValuePairs<String, String> = [
            "expired records": expiredRecords, "abandoned uploads": abandonedFiles, "oldest intent": oldestIntent,
        ]
    }

    /// What SQLite would do for `sql` (`EXPLAIN QUERY PLAN`): one line a step, e.g.
    /// `SEARCH records USING INDEX records_by_expiry (expires_at<?)`.
    func queryPlan(_ sql: String) throws(StoreError) -> [String] {
        let s = try db.statement("EXPLAIN QUERY PLAN " + sql)
        defer { s.finish() }
        var lines: [String] = []
        while try s.step() { lines.append(s.text(3) ?? "") }
        return lines
    }
}
