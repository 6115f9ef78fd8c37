import CloakCrypto

extension KeyCustody {
    /// The token's key a `pkcs11:` URI names, as a wrapping key; nil when the token has no such
    /// object, unless `create` makes it.
    /// - Throws: the URI is malformed, the PIN unreadable or refused, the module or token missing.
    static func pkcs11Wrapping(_ text: String, environment: [String: String], create: Bool) throws -> Wrapping? {
        let uri = try PKCS11URI(parsing: text)
        var pin = try uri.pin(environment: environment)
        defer { for i in pin.indices { pin[i] = 0 } }
        if let key = try PKCS11Key.open(uri, pin: pin) { return Wrapping(key: PKCS11KeyWrapping(key), legacyRing: nil) }
        guard create else { return nil }
        return Wrapping(key: PKCS11KeyWrapping(try PKCS11Key.create(uri, pin: pin)), legacyRing: nil)
    }
}
