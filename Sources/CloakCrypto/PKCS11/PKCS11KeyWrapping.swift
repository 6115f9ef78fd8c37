/// A token's AES key as the ring's wrapping key: the token wraps and unwraps; the key stays on it.
public struct PKCS11KeyWrapping: KeyWrapping {
    public let key: PKCS11Key
    public var kind: String { "pkcs11" }
    public var location: String { "token=\(key.tokenLabel);object=\(key.objectLabel)" }

    public init(_ key: PKCS11Key) { self.key = key }

    public func wrap(_ plain: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        do { return try key.seal(plain, associatedData: Array(context.utf8)) } catch {
            throw KeyRing.Error("the token could not wrap a key (\(location)): \(error)")
        }
    }

    public func unwrap(_ wrapped: [UInt8], context: String) throws(KeyRing.Error) -> [UInt8] {
        do { return try key.open(wrapped, associatedData: Array(context.utf8)) } catch {
            throw KeyRing.Error("the token's key (\(location)) cannot open the stored key ring")
        }
    }
}
