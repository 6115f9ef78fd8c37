import CloakCrypto
import CloakVault
import Dispatch
import Logging
import Synchronization

/// Picks up `cloak keys rotate` (and `retire`) on a running node: every `vault.key_refresh_s`
/// it reads the store's wrapped ring on a vault thread and, when it changed, unwraps it and
/// hands it to the vault. Unwrapping happens here, never per request. A ring that does not open
/// (another wrapping key, a damaged row) is logged and the node keeps the ring it has.
package final class KeyRefresh: Sendable {
    let vault: Vault
    let wrapping: any KeyWrapping
    let interval: Int
    let logger: Logger?
    private let last: Mutex<[UInt8]?>
    private let timer: RepeatingTimer

    init(vault: Vault, wrapping: any KeyWrapping, stored: [UInt8]?, interval: Int, logger: Logger?) {
        self.vault = vault
        self.wrapping = wrapping
        self.last = Mutex(stored)
        self.interval = interval
        self.logger = logger
        self.timer = RepeatingTimer(label: "cloak.key-refresh", interval: interval)
        // A record under a version this node has not picked up yet is read with the store's ring
        // at once (issue 34: a rewrap right after a rotation made other nodes answer 503).
        vault.onMissingKey { [weak self] bytes in self?.adopt(bytes, reason: "a record named a newer key version") }
    }

    /// Starts reading the ring every `interval` seconds.
    package func start() { timer.start { [weak self] in self?.refreshNow() } }

    package func stop() { timer.stop() }

    /// Reads the store's ring once and adopts it when it changed.
    package func refreshNow(done: (@Sendable () -> Void)? = nil) {
        vault.storedKeyRing { [self] result in
            defer { done?() }
            guard case let .success(bytes) = result, let bytes else { return }
            adopt(bytes, reason: "key_refresh_s")
        }
    }

    /// Unwraps the store's ring and hands it to the vault when it changed since the last one.
    private func adopt(_ bytes: [UInt8], reason: String) {
        guard last.withLock({ $0 }) != bytes else { return }
        do {
            let ring = try KeyCustody.unwrap(bytes, wrapping)
            if try vault.adoptKeys(ring) {
                logger?.notice(
                    "key ring refreshed",
                    metadata: [
                        "current": .string(ring.currentID),
                        "versions": .string(ring.keys.map(\.id).joined(separator: ",")),
                        "reason": .string(reason),
                    ])
            }
            last.withLock { $0 = bytes }
        } catch {
            logger?.error(
                "the store's key ring could not be opened; keeping the current one",
                metadata: ["reason": .string("\(error)")])
        }
    }
}
