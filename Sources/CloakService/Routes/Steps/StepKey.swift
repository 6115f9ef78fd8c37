import CloakCore
import CloakCrypto
import Foundation

/// A key a route step uses, named as the vault's keys are (``KeySource``) and loaded with the
/// configuration, at start and on reload (a key that does not load refuses the configuration,
/// so a reload keeps the route's old key):
///
/// - `file:PATH`: a PEM private key (PKCS#8, or the traditional RSA and EC forms; refused
///   unless the file's mode is 0600 or stricter), a public key (SPKI), or an X.509 certificate
///   (a provider's public key);
/// - `pkcs11:URI`: a private key on a token, which signs and decrypts there (the PIN from
///   `pin-source`, as `vault.keys` takes it; `type=private` may say what the object is);
/// - `env:NAME`: an HMAC secret, the variable's bytes, or the bytes of what follows `base64:`.
///
/// Never logged, never described: a key's description names its kind only.
package enum StepKey: Sendable, CustomStringConvertible {
    case secret(HMACKey)
    case privateKey(any PrivateKeyOperations)
    case publicKey(AsymmetricKey)

    package var description: String {
        switch self {
        case .secret: "an HMAC secret"
        case .privateKey(let key): "a private \(key.kind.rawValue) key"
        case .publicKey(let key): "a public \(key.kind.rawValue) key"
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// HMAC secrets shorter than this are refused (RFC 2104 advises at least the hash's output
    /// length; 16 bytes is the floor any provider's secret clears).
    static let minimumSecretBytes = 16

    /// Loads the key `text` names.
    package static func load(_ text: String, environment: [String: String]) throws(Failure) -> StepKey {
        let source: KeySource
        do { source = try KeySource(text, secretKey: false) } catch { throw Failure(error.description) }
        switch source {
        case .env(let name):
            guard let value = environment[name], !value.isEmpty else {
                throw Failure("the environment has no \(name) (or it is empty)")
            }
            var bytes = Array(value.utf8)
            if value.hasPrefix("base64:") {
                guard let decoded = Base64.decode(value.dropFirst(7)) else {
                    throw Failure("\(name) starts with base64: but the rest is not base64")
                }
                bytes = decoded
            }
            guard bytes.count >= minimumSecretBytes else {
                throw Failure("\(name) holds \(bytes.count) bytes; an HMAC secret needs at least \(minimumSecretBytes)")
            }
            return .secret(HMACKey(SymmetricKey(bytes)))
        case .file(let path):
            do {
                let key = try AsymmetricKey.read(file: path)
                return key.isPrivate ? .privateKey(key) : .publicKey(key)
            } catch {
                throw Failure(error.description)
            }
        case .pkcs11(let text):
            do throws(PKCS11Error) {
                let uri = try PKCS11URI(parsing: text)
                let pin = try uri.pin(environment: environment)
                guard let key = try PKCS11PrivateKey.open(uri, pin: pin) else {
                    throw PKCS11Error(.objectNotFound, "the token has no private key labelled \"\(uri.objectLabel)\"")
                }
                return .privateKey(key)
            } catch {
                throw Failure(error.description)
            }
        }
    }
}
