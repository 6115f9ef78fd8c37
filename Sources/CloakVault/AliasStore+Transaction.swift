/// The one way to run a transaction by hand (issue 76): the commands, migrations, rewraps and
/// the audit's upkeep go through it (the executor's group commit keeps its own, which batches
/// several jobs and retries conflicts).
extension AliasStore {
    /// Runs `body` in a transaction on this store (a write one; `reading`: one that only reads):
    /// committed when `body` returns, rolled back when it or the commit throws, and the error
    /// thrown on. `body` runs once: nothing here retries it, so a closure with effects outside
    /// the store (a file written, a line printed) never repeats them; a caller that retries does
    /// so around this, knowing what its closure does. A body that throws only ``StoreError``
    /// says so (`{ () throws(StoreError) in … }`) to keep the error's type.
    @discardableResult
    package func transaction<T>(reading: Bool = false, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        if reading { try beginReading() } else { try begin() }
        do {
            let value = try body()
            try commit()
            return value
        } catch {
            rollback()
            throw error
        }
    }

    /// ``transaction(reading:_:)-(_,()throws(StoreError)->T)`` for a body that throws anything.
    @discardableResult @_disfavoredOverload
    package func transaction<T>(reading: Bool = false, _ body: () throws -> T) throws -> T {
        if reading { try beginReading() } else { try begin() }
        do {
            let value = try body()
            try commit()
            return value
        } catch {
            rollback()
            throw error
        }
    }
}
