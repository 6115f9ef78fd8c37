import CloakCrypto
import Synchronization

extension Vault {
    /// The store's name for the wrapped key ring (``KeyRing/wrapped(by:)``).
    package static let keyRingName = "key_ring"

    /// The key versions this vault opens, and the one it seals with.
    package var keyVersions: (ids: [String], current: String) {
        let keys = self.keys
        return (keys.keys.map(\.id), keys.currentID)
    }

    /// Replaces the ring with `next` (a rotation or retirement read from the store), when it is
    /// the same ring (same fingerprint key: every alias stays the same) and its current version is
    /// the same or a later one. An older ring written back into the store (a database writer
    /// rolling the ring back to bring a retired, perhaps leaked, version back into use) is refused:
    /// version numbers only grow, and the number is bound into each wrapped key.
    /// - Returns: whether the ring changed.
    @discardableResult
    package func adoptKeys(_ next: KeyRing) throws(VaultError) -> Bool {
        let changed = ring.withLock { (ring: inout KeyRing) -> Result<Bool, VaultError> in
            guard constantTimeEquals(next.checkValue, ring.checkValue) else {
                return .failure(.unavailable("the store's key ring is another ring than the one this node opened"))
            }
            guard KeyRing.versionNumber(next.currentID) >= KeyRing.versionNumber(ring.currentID) else {
                return .failure(
                    .unavailable(
                        "the store's key ring makes \(next.currentID) current, older than \(ring.currentID): refused"))
            }
            let same = next.currentID == ring.currentID && next.keys.map { $0.id } == ring.keys.map { $0.id }
            if !same { ring = next }
            return .success(!same)
        }
        return try changed.get()
    }

    /// Sets what a vault thread hands the store's wrapped ring to when a record names a key
    /// version this node does not hold (``MissingKeyRead``): the caller unwraps it and calls
    /// ``adoptKeys(_:)``. Without it such a record is unavailable until the next refresh.
    package func onMissingKey(_ adopt: @escaping @Sendable (_ wrappedRing: [UInt8]) -> Void) {
        missingKey.setAdopt(adopt)
    }

    /// How many times a vault thread read the store's ring for a missing version (tests).
    package var missingKeyReads: Int { missingKey.reads }

    /// Reads the store's wrapped ring on the executor thread (nil when the store keeps none).
    package func storedKeyRing(completion: @escaping @Sendable (Result<[UInt8]?, VaultError>) -> Void) {
        executor.submit(
            reads: true, { store in try store.metadata(Self.keyRingName) }, completion: { completion(Self.map($0)) })
    }
}

extension Vault {
    /// Runs `body` against the store on a vault thread, inside a transaction of its own batch
    /// (read-only with `reads`): what the service keeps beside the records (API credentials)
    /// reaches every node through the same store. `body`'s own errors reach `completion` as
    /// they were thrown.
    package func withStore<T: Sendable>(
        reads: Bool, _ body: @escaping (any AliasStore) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        executor.submit(reads: reads, body, completion: completion)
    }

    /// Runs a writing `body` on the vault thread with the audit events of the change it makes,
    /// `drafts`: they commit in its transaction or not at all (without an audit trail, nothing
    /// is stored but the change).
    package func withStore<T: Sendable>(
        recording drafts: [AuditEvent.Draft], _ body: @escaping (any AliasStore) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        guard settings.audit != nil, !drafts.isEmpty else {
            return executor.submit(reads: false, body, completion: completion)
        }
        executor.submit(body, recording: drafts, completion: completion)
    }
}
