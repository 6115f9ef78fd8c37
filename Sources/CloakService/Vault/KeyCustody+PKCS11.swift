import CloakCrypto

extension KeyCustody {
    /// The token's key a `pkcs11:` URI names, as a wrapping key; nil when the token has no such
    /// object (made with `create`).
    static func pkcs11Wrapping(_ text: String, environment: [String: String], create: Bool) throws -> Wrapping? {
        throw Error("PKCS#11 is not built yet")
    }
}
struct PKCS11URI {
    init(parsing: String) throws(KeyCustody.Error) {}
}
