import CloakCore
import CloakCrypto
import CloakVault

/// The API credentials made at run time (`cloak tokens`, `POST /admin/tokens`), kept in the
/// vault's store beside its records so every node of a cluster shares them: one document under
/// ``storeName``, changed only by compare-and-set (two operators cannot lose each other's
/// change). The store keeps each token's SHA-256, never the token.
///
/// Pure: parsing, rules and encoding; ``CredentialAdministration`` reads and writes the store.
package struct APICredentials: Sendable, Equatable {
    package var tokens: [ServiceConfiguration.AccessToken]

    package init(tokens: [ServiceConfiguration.AccessToken] = []) { self.tokens = tokens }

    /// The store's name for the document (``AliasStore/metadata(_:)``).
    package static let storeName = "api_credentials"
    /// When any node last saw each store token presented: `{id: unix seconds}`.
    static let usedName = "api_credentials_used"

    /// Why a change was refused; `kind` decides the HTTP answer.
    package struct Error: Swift.Error, CustomStringConvertible, Equatable {
        package enum Kind: Sendable { case invalid, forbidden, notFound, conflict, store }
        package let kind: Kind
        package let description: String
        init(_ description: String, _ kind: Kind = .invalid) {
            self.kind = kind
            self.description = description
        }

        /// The VGSError answer.
        package var cloakError: CloakError {
            switch kind {
            case .invalid, .conflict: return .malformed(description)
            case .forbidden: return CloakError(.forbidden, description)
            case .notFound: return .notFound(description)
            case .store: return CloakError(.vaultUnavailable, description)
            }
        }
    }

    // MARK: Rules

    /// Token ids: 1 to 64 of `A-Z a-z 0-9 - _ .`.
    package static func isValidID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 45 || $0 == 95 || $0 == 46
            }
    }

    /// Whether a caller holding `held` may grant `scope`: it holds it (`egress:*` covers every
    /// egress route's scope).
    package static func mayGrant(_ scope: String, holding held: Set<String>) -> Bool {
        held.contains(scope) || (scope.hasPrefix("egress:") && held.contains("egress:*"))
    }

    /// `90d`, `12h`, `30m`, `45s` or plain seconds, at least a minute and at most ten years.
    package static func parseTTL(_ text: String) -> Int64? {
        guard let unit = text.last else { return nil }
        let multiplier: Int64
        var digits = Substring(text)
        switch unit {
        case "d": multiplier = 86_400
        case "h": multiplier = 3_600
        case "m": multiplier = 60
        case "s": multiplier = 1
        default: multiplier = 1; digits = Substring(text + "_")
        }
        digits = digits.dropLast()
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let n = Int64(digits)
        else { return nil }
        let seconds = n * multiplier
        return (60...315_360_000).contains(seconds) ? seconds : nil
    }

    /// A new secret: `ck_` and 32 random bytes in URL-safe base64 (43 characters).
    package static func newSecret() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let bytes = SecureRandom.bytes(32)
        var out = Array("ck_".utf8)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int(buffer >> UInt32(bits) & 63)])
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(6 - bits) & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Encoding

    package func encoded() -> [UInt8] {
        var tokens: [JSONValue] = []
        for token in self.tokens {
            var members: [(key: String, value: JSONValue)] = [
                ("id", .string(token.id)), ("sha256", .string(Self.hex(token.sha256))),
                ("scopes", .strings(token.scopes.sorted())), ("created_at", .int(Int(token.createdAt ?? 0))),
            ]
            if let expiresAt = token.expiresAt { members.append(("expires_at", .int(Int(expiresAt)))) }
            if let perMinute = token.requestsPerMinute { members.append(("requests_per_minute", .int(perMinute))) }
            if let account = token.guessAccount { members.append(("guess_account", .string(account))) }
            if let limit = token.bucketValuesPerHour { members.append(("bucket_values_per_hour", .int(limit))) }
            tokens.append(.object(members))
        }
        return JSONWriter.encode(.object([("version", .int(1)), ("tokens", .array(tokens))]))
    }

    /// The stored document; a damaged one is an error (the caller keeps what it had).
    package static func decode(_ bytes: [UInt8]) throws(Error) -> APICredentials {
        guard let document = try? JSONParser().parse(bytes), case let .array(items)? = document["tokens"] else {
            throw Error("the store's api_credentials document is not readable", .store)
        }
        var tokens: [ServiceConfiguration.AccessToken] = []
        for item in items {
            guard let id = item["id"]?.stringValue, isValidID(id),
                let digest = item["sha256"]?.stringValue.flatMap(decodeHex), digest.count == 32,
                case let .array(scopeValues)? = item["scopes"]
            else { throw Error("the store's api_credentials document has a damaged token", .store) }
            var token = ServiceConfiguration.AccessToken(
                id: id, sha256: digest, scopes: Set(scopeValues.compactMap(\.stringValue)),
                requestsPerMinute: item["requests_per_minute"].flatMap(int).map(Int.init))
            token.source = .store
            token.createdAt = item["created_at"].flatMap(int)
            token.expiresAt = item["expires_at"].flatMap(int)
            token.guessAccount = item["guess_account"]?.stringValue
            token.bucketValuesPerHour = item["bucket_values_per_hour"].flatMap(int).map(Int.init)
            tokens.append(token)
        }
        return APICredentials(tokens: tokens)
    }

    static func int(_ value: JSONValue) -> Int64? {
        if case let .number(text) = value { return Int64(text) }
        return nil
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func == (a: APICredentials, b: APICredentials) -> Bool { a.encoded() == b.encoded() }
}
