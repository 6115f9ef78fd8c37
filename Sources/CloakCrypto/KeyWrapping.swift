/// A key-encrypting key: what wraps the vault's data keys (the ring) before they are kept in the
/// store. Its key never leaves it: a software wrapping key (``SoftwareKeyWrapping``, from a key
/// file or a master key in the environment) is held in memory, a token's (``PKCS11KeyWrapping``)
/// stays on the token, which does the wrapping itself.
///
/// Every wrapping is AES-256-GCM with a context as associated data, so a wrapped key cannot be
/// moved to another place of the ring unnoticed.
package protocol KeyWrapping: Sendable {
    /// `file`, `env` or `pkcs11`: what `cloak keys status` reports.
    var kind: String { get }
    /// Where the key is, for status lines and errors: a path, a variable's name, a token's and an
    /// object's labels. Never key material.
    var location: String { get }
    func wrap(_ key: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8]
    /// - Throws: when the key is not the one that wrapped, or the bytes were altered.
    func unwrap(_ wrapped: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8]
}

/// A wrapping key held in memory: derived from a key file or from the master key in the
/// environment. Wrapped: `nonce ‖ ciphertext ‖ tag`.
package struct SoftwareKeyWrapping: KeyWrapping {
    package let kind: String
    package let location: String
    private let key: SymmetricKey

    package init(kind: String, location: String, key: SymmetricKey) {
        self.kind = kind
        self.location = location
        self.key = key
    }

    package func wrap(_ plain: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        do {
            let box = try AESGCM.seal(plain, key: key, associatedData: Array(context.utf8))
            return box.nonce + box.ciphertext + box.tag
        } catch {
            throw KeyRing.Error("cannot wrap a key")
        }
    }

    package func unwrap(_ wrapped: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        guard wrapped.count >= 28 else { throw KeyRing.Error("a wrapped key is truncated") }
        let box = AESGCM.SealedBox(
            nonce: Array(wrapped.prefix(12)), ciphertext: Array(wrapped.dropFirst(12).dropLast(16)),
            tag: Array(wrapped.suffix(16)))
        do {
            return try AESGCM.open(box, key: key, associatedData: Array(context.utf8))
        } catch {
            throw KeyRing.Error("the wrapping key (\(kind): \(location)) cannot open the stored key ring")
        }
    }
}
