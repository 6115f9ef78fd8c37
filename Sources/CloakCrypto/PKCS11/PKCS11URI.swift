import Foundation

/// A PKCS#11 key as `vault.keys` names it, an RFC 7512 URI in Cloak's spelling:
///
/// `pkcs11:token=<label>;object=<label>?module-path=<path>&pin-source=file:<path>`
/// (or `pin-source=env:<NAME>`). Attribute values are percent-decoded. `type`, when given, is
/// `secret-key` (the vault's key) or `private` (a route step's signing key). The PIN never goes in the URI: `pin-value` is refused, so a URI is safe to
/// print and log.
package struct PKCS11URI: Sendable, Equatable, CustomStringConvertible {
    package enum PinSource: Sendable, Equatable {
        /// A file holding the PIN (one trailing newline ignored), readable by its owner only.
        case file(String)
        /// An environment variable holding the PIN.
        case env(String)
    }

    package let tokenLabel: String
    package let objectLabel: String
    /// `type`, when the URI gives it.
    package let objectType: String?
    package let modulePath: String
    package let pinSource: PinSource
    package let description: String

    /// Path attributes Cloak reads or accepts (and ignores) from RFC 7512.
    static let pathAttributes: Set<String> = [
        "token", "object", "type", "id", "manufacturer", "model", "serial", "library-description",
        "library-manufacturer", "library-version", "slot-description", "slot-id", "slot-manufacturer",
    ]

    package init(parsing text: String) throws(PKCS11Error) {
        guard text.hasPrefix("pkcs11:") else { throw PKCS11Error(.malformedURI, "a PKCS#11 URI starts with pkcs11:") }
        let body = text.dropFirst("pkcs11:".count)
        let parts = body.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var path: [String: String] = [:]
        for attribute in parts[0].split(separator: ";") {
            let (name, value) = try Self.attribute(attribute)
            guard name != "pin-value" else {
                throw PKCS11Error(.malformedURI, "the PIN must not be in the URI: use pin-source=file:… or env:…")
            }
            guard Self.pathAttributes.contains(name) else {
                throw PKCS11Error(.malformedURI, "unknown PKCS#11 URI attribute \(name)")
            }
            guard path[name] == nil else { throw PKCS11Error(.malformedURI, "\(name) is given twice") }
            path[name] = value
        }
        var query: [String: String] = [:]
        if parts.count > 1 {
            for attribute in parts[1].split(separator: "&") {
                let (name, value) = try Self.attribute(attribute)
                guard name != "pin-value" else {
                    throw PKCS11Error(.malformedURI, "the PIN must not be in the URI: use pin-source=file:… or env:…")
                }
                guard ["module-path", "pin-source", "module-name"].contains(name) else {
                    throw PKCS11Error(.malformedURI, "unknown PKCS#11 URI query attribute \(name)")
                }
                guard query[name] == nil else { throw PKCS11Error(.malformedURI, "\(name) is given twice") }
                query[name] = value
            }
        }
        guard let token = path["token"], !token.isEmpty else {
            throw PKCS11Error(.malformedURI, "the URI must name the token (token=<label>)")
        }
        guard let object = path["object"], !object.isEmpty else {
            throw PKCS11Error(.malformedURI, "the URI must name the key object (object=<label>)")
        }
        if let type = path["type"], type != "secret-key", type != "private" {
            throw PKCS11Error(.malformedURI, "type must be secret-key (the vault's key) or private (a signing key)")
        }
        objectType = path["type"]
        guard let module = query["module-path"], module.hasPrefix("/") else {
            throw PKCS11Error(.malformedURI, "the URI must give the module's absolute path (?module-path=/…)")
        }
        guard let pin = query["pin-source"] else {
            throw PKCS11Error(.malformedURI, "the URI must say where the PIN is (pin-source=file:PATH or env:NAME)")
        }
        if pin.hasPrefix("file:"), pin.count > 5 {
            pinSource = .file(String(pin.dropFirst(5)))
        } else if pin.hasPrefix("env:"), pin.count > 4 {
            pinSource = .env(String(pin.dropFirst(4)))
        } else {
            throw PKCS11Error(.malformedURI, "pin-source must be file:PATH or env:NAME")
        }
        tokenLabel = token
        objectLabel = object
        modulePath = module
        description = text
    }

    /// A `name=value` attribute, its value percent-decoded.
    private static func attribute(_ text: Substring) throws(PKCS11Error) -> (String, String) {
        let pair = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard pair.count == 2, !pair[0].isEmpty else {
            throw PKCS11Error(.malformedURI, "expected name=value in the PKCS#11 URI")
        }
        guard let value = String(pair[1]).removingPercentEncoding else {
            throw PKCS11Error(.malformedURI, "a percent escape in \(pair[0]) is malformed")
        }
        return (String(pair[0]).lowercased(), value)
    }

    /// Where the key is, for status lines and errors.
    package var location: String { "token=\(tokenLabel);object=\(objectLabel)" }

    /// The PIN from its source. A file's single trailing newline (`\n` or `\r\n`) is ignored.
    package func pin(environment: [String: String]) throws(PKCS11Error) -> [UInt8] {
        switch pinSource {
        case let .file(path):
            var bytes: [UInt8]
            do throws(SecretFile.ReadFailure) { bytes = try SecretFile.read(path) } catch {
                throw PKCS11Error(.pinUnreadable, "the PIN file: " + error.message(path: path))
            }
            if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard !bytes.isEmpty else { throw PKCS11Error(.pinUnreadable, "the PIN file \(path) is empty") }
            return bytes
        case let .env(name):
            guard let value = environment[name], !value.isEmpty else {
                throw PKCS11Error(.pinUnreadable, "pin-source names \(name), which is not set")
            }
            return Array(value.utf8)
        }
    }
}
