import CloakVault
import Logging

/// An export's reads, on a store connection of the walking thread's own (a thread at nice 10):
/// a million records' pages read and opened there, not on the vault's threads, which answer
/// requests at nice 0 (a SQLite file or a PostgreSQL server, like the audit search's own
/// connection). Where the store cannot be opened twice (an in-memory database), or the second
/// connection fails, the reads go through the vault's executor as any other.
package final class ExportReads {
    private let runner: JobRunner
    private var own: (any AliasStore)?

    init(_ runner: JobRunner) {
        self.runner = runner
        let url = runner.dependencies.configuration.store
        if !url.hasSuffix(":memory:") {
            do { own = try StoreURL.open(url) } catch {
                runner.dependencies.logger.warning(
                    "jobs: an export reads through the vault (no connection of its own)",
                    metadata: ["reason": "\(error)"])
            }
        }
    }

    func read<T: Sendable>(_ body: @escaping (any AliasStore) throws -> T) -> Result<T, any Error> {
        guard let own else { return runner.withStore(reads: true, body) }
        return Result { try body(own) }
    }
}
