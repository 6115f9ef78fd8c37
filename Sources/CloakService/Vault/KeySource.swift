import CloakCrypto

/// Where the vault's wrapping key is (`vault.keys`):
///
/// - `file:PATH`: a key file (``WrappingKeyFile``); `CLOAK_MASTER_KEY`, when set, is used instead;
/// - `env:NAME`: a 32-byte master key in the variable (64 hex characters or base64);
/// - `pkcs11:token=…;object=…?module-path=…&pin-source=file:…|env:…`: an AES key on a PKCS#11
///   token (RFC 7512; the PIN never in the URI).
package enum KeySource: Sendable, Equatable {
    case file(String)
    case env(String)
    case pkcs11(String)

    package struct Error: Swift.Error, CustomStringConvertible {
        package let description: String
    }

    /// - Parameter secretKey: the key is the vault's (a `pkcs11:` URI may not name a private
    ///   key); false for a route step's.
    package init(_ text: String, secretKey: Bool = true) throws(Error) {
        if text.hasPrefix("file:"), text.count > 5 {
            self = .file(String(text.dropFirst(5)))
        } else if text.hasPrefix("env:"), text.count > 4 {
            self = .env(String(text.dropFirst(4)))
        } else if text.hasPrefix("pkcs11:") {
            let uri: PKCS11URI
            do { uri = try PKCS11URI(parsing: text) } catch { throw Error(description: error.description) }
            if secretKey, uri.objectType == "private" {
                throw Error(description: "the vault's key must be a secret key (type=secret-key)")
            }
            self = .pkcs11(text)
        } else {
            throw Error(description: "expected file:PATH, env:VARIABLE or a pkcs11: URI")
        }
    }

    /// The source `serve` uses: `CLOAK_MASTER_KEY`, when set and non-empty, stands in for a key file.
    package static func effective(_ text: String, environment: [String: String]) throws(Error) -> KeySource {
        let source = try KeySource(text)
        if case .file = source, let master = environment["CLOAK_MASTER_KEY"], !master.isEmpty {
            return .env("CLOAK_MASTER_KEY")
        }
        return source
    }

    /// `file`, `env` or `pkcs11`.
    package var kind: String {
        switch self {
        case .file: return "file"
        case .env: return "env"
        case .pkcs11: return "pkcs11"
        }
    }
}
