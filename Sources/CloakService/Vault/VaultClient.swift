import CloakHTTP
import CloakVault

/// The vault as one request's handlers use it: every completion runs on the request's loop
/// thread. Encoding the answer, counting it in metrics and writing its log line are then loop
/// work, spread over the loops, and the vault thread does nothing but read, write and commit.
/// (A completion the vault calls on the loop itself, such as a cached alias, runs at once.)
struct VaultClient: Sendable {
    let vault: Vault
    /// The request's loop; nil outside a server (in-process callers), where completions run
    /// wherever the vault calls them.
    let loop: LoopHandle?

    var settings: Vault.Settings { vault.settings }

    func createAliases(_ requests: [AliasRequest], caller: AliasCaller,
                       completion: @escaping @Sendable (Result<[RevealedRecord], VaultError>) -> Void) {
        vault.createAliases(requests, caller: caller) { result in onLoop { completion(result) } }
    }

    func reveal(_ aliases: [String], completion: @escaping @Sendable (Result<[String: RevealedRecord], VaultError>) -> Void) {
        vault.reveal(aliases) { result in onLoop { completion(result) } }
    }

    func delete(_ alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.delete(alias) { result in onLoop { completion(result) } }
    }

    func setClassifiers(_ classifiers: [String], alias: String, completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.setClassifiers(classifiers, alias: alias) { result in onLoop { completion(result) } }
    }

    func ping(completion: @escaping @Sendable (Result<Void, VaultError>) -> Void) {
        vault.ping { result in onLoop { completion(result) } }
    }

    private func onLoop(_ work: @escaping @Sendable () -> Void) {
        if let loop { loop.execute(work) } else { work() }
    }
}
