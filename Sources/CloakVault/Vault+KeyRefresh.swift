import CloakCrypto
import Synchronization

extension Vault {
    /// The store's name for the wrapped key ring (``KeyRing/wrapped(by:)``).
    public static let keyRingName = "key_ring"

    /// The key versions this vault opens, and the one it seals with.
    public var keyVersions: (ids: [String], current: String) {
        let keys = self.keys
        return (keys.keys.map(\.id), keys.currentID)
    }

    /// Replaces the ring with `next` (a rotation or retirement read from the store), when it is
    /// the same ring (same fingerprint key: every alias stays the same) and its current key is
    /// new or the same.
    /// - Returns: whether the ring changed.
    @discardableResult
    public func adoptKeys(_ next: KeyRing) throws(VaultError) -> Bool {
        let changed = ring.withLock { (ring: inout KeyRing) -> Bool? in
            guard constantTimeEquals(next.checkValue, ring.checkValue) else { return nil }
            let same = next.currentID == ring.currentID && next.keys.map { $0.id } == ring.keys.map { $0.id }
            if !same { ring = next }
            return !same
        }
        guard let changed else {
            throw VaultError.unavailable("the store's key ring is another ring than the one this node opened")
        }
        return changed
    }

    /// Reads the store's wrapped ring on the executor thread (nil when the store keeps none).
    public func storedKeyRing(completion: @escaping @Sendable (Result<[UInt8]?, VaultError>) -> Void) {
        executor.submit({ store in try store.metadata(Self.keyRingName) }, completion: { completion(Self.map($0)) })
    }
}
