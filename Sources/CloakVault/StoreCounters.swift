/// What a store has sent its database since it opened: statements run (transaction control
/// included) and rows they read or changed. Only ever compared with an earlier reading on the
/// same thread: the executor reports a batch's difference in its span (``VaultBatchSummary``).
package struct StoreCounters: Sendable, Equatable {
    package var statements = 0
    package var rows = 0

    package init(statements: Int = 0, rows: Int = 0) {
        self.statements = statements
        self.rows = rows
    }
}
