import CLibPQ

extension PostgreSQLConnection {
    /// One statement of a ``pipeline(_:)``.
    struct Statement {
        var sql: String
        var parameters: [Value] = []
    }

    /// Sends `statements` in libpq's pipeline mode and reads their answers: one round trip for
    /// all of them, where ``query(_:_:)`` takes one each. Returns each statement's rows, in order.
    ///
    /// When one fails, the server skips the rest up to the pipeline's end, and its error is thrown
    /// once every answer was read (the connection is then ready for the next statement; a
    /// transaction the pipeline opened is left failed, for the caller to roll back). Statements
    /// are prepared before the pipeline starts, the first time each is seen.
    func pipeline(_ statements: [Statement]) throws(StoreError) -> [[Row]] {
        guard let conn else { throw .unavailable("not connected to PostgreSQL") }
        var names: [String] = []
        for statement in statements {
            names.append(try statementName(statement.sql, types: statement.parameters.map(\.encoded.type)))
        }
        guard PQenterPipelineMode(conn) == 1 else { throw .unavailable("PostgreSQL refused pipeline mode") }
        for (statement, name) in zip(statements, names) {
            let sent = Self.withParameters(statement.parameters) { _, values, lengths, formats in
                PQsendQueryPrepared(conn, name, Int32(statement.parameters.count), values, lengths, formats, 1)
            }
            guard sent == 1 else { throw abandon("send") }
        }
        guard PQpipelineSync(conn) == 1 else { throw abandon("sync") }
        var answers: [[Row]] = []
        var failure: StoreError?
        for _ in statements {
            guard let result = PQgetResult(conn) else { throw abandon("read") }
            defer { PQclear(result) }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                answers.append([])
            } else {
                do throws(StoreError) {
                    try check(result, "pipeline")
                    answers.append(Self.rows(of: result))
                } catch {
                    failure = failure ?? error
                    answers.append([])
                }
            }
            // Each statement's answer ends with a NULL.
            if let extra = PQgetResult(conn) {
                PQclear(extra)
                throw abandon("read")
            }
        }
        guard let sync = PQgetResult(conn) else { throw abandon("sync") }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(conn) == 1 else { throw abandon("end") }
        if let failure { throw failure }
        return answers
    }

    /// A pipeline that cannot go on (the connection broke, or answered out of turn): the
    /// connection is closed, so nothing can follow on it in an unknown state, and the store
    /// reconnects on its next use. What was sent is undone by the server unless its COMMIT was
    /// read: the outcome is unknown, and the caller says so (503).
    private func abandon(_ step: String) -> StoreError {
        let why = conn.map { PQstatus($0) == CONNECTION_OK ? "answered out of turn" : "the connection broke" } ?? ""
        drop()
        return .unavailable("pipeline \(step): \(why)")
    }
}
