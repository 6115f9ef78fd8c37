import CloakCore
import CloakCrypto

/// Reveals on the calling thread, on a read-only connection of its own, instead of queueing on
/// the vault's executor: no thread hop for the most common read (a route revealing one alias
/// on its way to a payment processor). Made per event loop (``Vault/makeReader()``) and used
/// only there; it reads the last commit, so it sees whatever a completed create or delete left.
///
/// Not `Sendable`: one thread only.
public final class VaultReader {
    private let vault: Vault
    private let store: any AliasStore

    init(vault: Vault, store: any AliasStore) {
        self.vault = vault
        self.store = store
    }

    /// The records of the aliases found (expired ones are not found), as ``Vault/reveal(_:completion:)``
    /// answers; nil when the store could not be read here (busy, an I/O error): the caller then
    /// asks the vault, whose executor reports any lasting failure.
    public func reveal(_ aliases: [String]) -> Result<[String: RevealedRecord], VaultError>? {
        do {
            var out: [String: RevealedRecord] = [:]
            for alias in aliases {
                if let record = try vault.liveRecord(alias, in: store) { out[alias] = try vault.open(record) }
            }
            return .success(out)
        } catch is StoreError {
            return nil
        } catch let error as VaultError {
            return .failure(error)
        } catch {
            return nil
        }
    }
}

extension Vault {
    /// A reader for the calling thread, or nil when the store has no read-only connections
    /// (PostgreSQL: its executors' connections are the node's, and a network read would block
    /// a loop) or one cannot be opened.
    public func makeReader() -> VaultReader? {
        guard let readers, let store = try? readers() else { return nil }
        return VaultReader(vault: self, store: store)
    }
}
