/// A token's AES key as the ring's wrapping key: the token wraps and unwraps; the key stays on it.
package struct PKCS11KeyWrapping: KeyWrapping {
    package let key: PKCS11Key
    package var kind: String { "pkcs11" }
    package var location: String { "token=\(key.tokenLabel);object=\(key.objectLabel)" }

    package init(_ key: PKCS11Key) { self.key = key }

    package func wrap(_ plain: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        do { return try key.seal(plain, associatedData: Array(context.utf8)) } catch {
            throw KeyRing.Error("the token could not wrap a key (\(location)): \(error)")
        }
    }

    package func unwrap(_ wrapped: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        do { return try key.open(wrapped, associatedData: Array(context.utf8)) } catch {
            throw KeyRing.Error("the token's key (\(location)) cannot open the stored key ring")
        }
    }
}
