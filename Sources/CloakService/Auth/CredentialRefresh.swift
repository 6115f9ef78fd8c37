import CloakVault
import Dispatch
import Logging
import Synchronization

/// Keeps a node's ``TokenDirectory`` in step with the store's API credentials: every
/// `auth.refresh_s` it reads the document on a vault thread (and hands the store this node's
/// marks of use), and adopts it when it changed. A document that does not read is logged and
/// the node keeps the tokens it has.
package final class CredentialRefresh: Sendable {
    let vault: Vault
    let directory: TokenDirectory
    let interval: Int
    let logger: Logger
    private let last = Mutex<[UInt8]?>(nil)
    /// The marks of use already handed to the store.
    private let flushed = Mutex<[String: Int64]>([:])
    private let timer: RepeatingTimer

    init(vault: Vault, directory: TokenDirectory, interval: Int, logger: Logger) {
        self.vault = vault
        self.directory = directory
        self.interval = interval
        self.logger = logger
        self.timer = RepeatingTimer(label: "cloak.credential-refresh", interval: interval)
    }

    package func start() { timer.start { [weak self] in self?.refreshNow() } }

    package func stop() { timer.stop() }

    deinit { stop() }

    /// Reads the store's credentials once (after handing it this node's new marks of use) and
    /// adopts them when they changed; `done` runs after.
    func refreshNow(done: (@Sendable () -> Void)? = nil) {
        let storeIDs = Set(directory.all.filter { $0.source == .store }.map(\.id))
        let seen = directory.lastUsed.filter { storeIDs.contains($0.key) }
        let used = flushed.withLock { flushed in seen.filter { flushed[$0.key] != $0.value } }
        vault.withStore(reads: used.isEmpty) { store in
            if !used.isEmpty { try CredentialAdministration(store: store, yamlIDs: []).recordUse(used) }
            return try store.metadata(APICredentials.storeName)
        } completion: { [self] result in
            defer { done?() }
            switch result {
            case let .success(bytes):
                flushed.withLock { for (id, t) in used { $0[id] = t } }
                adopt(bytes ?? [])
            case let .failure(error):
                logger.warning(
                    "cannot read the store's API credentials; keeping the current ones",
                    metadata: ["reason": .string("\(error)")])
            }
        }
    }

    /// Refreshes and waits (at start, before listening: a store token works from the first request).
    package func refreshAndWait() {
        let done = DispatchSemaphore(value: 0)
        refreshNow { done.signal() }
        done.wait()
    }

    private func adopt(_ bytes: [UInt8]) {
        guard last.withLock({ $0 }) != bytes else { return }
        do {
            let credentials = bytes.isEmpty ? APICredentials() : try APICredentials.decode(bytes)
            let conflicts = directory.adopt(credentials.tokens)
            for id in conflicts {
                logger.error(
                    "an API credential in the store has the id of a token in auth.tokens; the store's is refused",
                    metadata: ["token_id": .string(id)])
            }
            last.withLock { $0 = bytes }
        } catch {
            logger.error(
                "the store's API credentials could not be read; keeping the current ones",
                metadata: ["reason": .string("\(error)")])
        }
    }
}
