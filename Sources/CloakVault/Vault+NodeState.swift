import CloakCrypto

extension Vault {
    /// Seals a node's own state kept in the store (its guess windows: review V, item 5) under a
    /// key derived from the fingerprint key, which never rotates (a retired data key must not
    /// orphan it), bound to `name`: a database writer can neither read it nor move one node's
    /// state to another's name.
    package func sealNodeState(_ plain: [UInt8], name: String) throws(VaultError) -> [UInt8] {
        do {
            return FileSeal.pack(try AESGCM.seal(plain, key: nodeStateKey, associatedData: Self.nodeStateContext(name)))
        } catch {
            throw .unavailable("the node's state could not be sealed")
        }
    }

    /// A state ``sealNodeState(_:name:)`` sealed under `name`, or nil when it does not open
    /// (altered, moved, or sealed by another key ring).
    package func openNodeState(_ sealed: [UInt8], name: String) -> [UInt8]? {
        guard let box = FileSeal.unpack(sealed) else { return nil }
        return try? AESGCM.open(box, key: nodeStateKey, associatedData: Self.nodeStateContext(name))
    }

    private var nodeStateKey: SymmetricKey { fingerprintKey.derive("cloak/v1/node-state") }

    private static func nodeStateContext(_ name: String) -> [UInt8] {
        Array("cloak/v1/node-state\0".utf8) + Array(name.utf8)
    }
}
