import CloakCore
import CloakCrypto
import Foundation

/// A Cloak Elements reveal session: which aliases a page may show through Cloak's reveal frame,
/// until when, and which token minted it (`POST /elements/sessions`).
///
/// Stateless and signed: `cs1.<payload>.<mac>`, both base64url, the payload a small JSON
/// object, the MAC an HMAC-SHA-256 under a key derived from the vault's key ring, so every
/// node that shares the key ring accepts a session any of them made. A session is a bearer
/// capability for its aliases until it expires (at most ``maxTTL`` seconds).
struct RevealSession: Sendable, Equatable {
    var tokenID: String
    var aliases: [String]
    /// Seconds since 1970.
    var expiresAt: Int64
    /// The end user's address, when the backend bound the session to it: reveals from any other
    /// address (a script that sent the session to its own server) are refused.
    var client: String? = nil
    /// Who may reveal through it: Cloak's reveal frame (`web`) or an app (`native`,
    /// `POST /elements/v1/native/reveal`). Each path refuses the other's sessions.
    var audience: Audience = .web
    /// The first 8 bytes of the minting token's SHA-256 (``tokenDigest(_:)``): a token given a new
    /// secret under the same id (a leaked one replaced) ends the sessions the old secret minted.
    var tokenDigest: [UInt8] = []

    static func tokenDigest(_ sha256: [UInt8]) -> [UInt8] { Array(sha256.prefix(8)) }

    enum Audience: String, Sendable {
        case web, native
    }

    static let maxTTL = 600
    static let defaultTTL = 300
    static let maxAliases = 20
    private static let prefix = "cs1."

    func sealed(with key: HMACKey) -> String {
        var writer = JSONWriter()
        var members: [(key: String, value: JSONValue)] = [
            ("t", .string(tokenID)), ("e", .number(String(expiresAt))), ("a", .strings(aliases)),
        ]
        if let client { members.append(("c", .string(client))) }
        if audience == .native { members.append(("u", .string(audience.rawValue))) }
        members.append(("k", .string(Self.base64url(tokenDigest))))
        writer.write(.object(members))
        let payload = Self.base64url(writer.takeBytes())
        let mac = Self.base64url(key.authenticate(Array((Self.prefix + payload).utf8)))
        return Self.prefix + payload + "." + mac
    }

    /// Why a session does not open.
    enum Problem: Error, Equatable {
        case malformed, badSignature, expired
    }

    /// The session `text` holds, when its MAC is right and it has not expired at `now`.
    static func open(_ text: String, key: HMACKey, now: Int64) throws(Problem) -> RevealSession {
        guard text.utf8.count <= 8192, text.hasPrefix(prefix) else { throw .malformed }
        let parts = text.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let macBytes = decodeBase64url(parts[1]) else { throw .malformed }
        let expected = key.authenticate(Array((prefix + parts[0]).utf8))
        guard constantTimeEquals(macBytes, expected) else { throw .badSignature }
        guard let payload = decodeBase64url(parts[0]), let document = try? JSONParser().parse(payload),
            case let .string(tokenID)? = document["t"], case let .number(e)? = document["e"], let expiresAt = Int64(e),
            case let .array(list)? = document["a"]
        else { throw .malformed }
        let aliases = list.compactMap(\.stringValue)
        guard aliases.count == list.count else { throw .malformed }
        // Sessions minted before audiences existed carry none: web.
        var audience = Audience.web
        if let u = document["u"] {
            guard let text = u.stringValue, let named = Audience(rawValue: text) else { throw .malformed }
            audience = named
        }
        let digest = document["k"]?.stringValue.flatMap { decodeBase64url(Substring($0)) } ?? []
        guard now < expiresAt else { throw .expired }
        return RevealSession(
            tokenID: tokenID, aliases: aliases, expiresAt: expiresAt, client: document["c"]?.stringValue,
            audience: audience, tokenDigest: digest)
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64url(_ text: Substring) -> [UInt8]? {
        guard
            text.utf8.allSatisfy({ b in
                (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 95
            })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
