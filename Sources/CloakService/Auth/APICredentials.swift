import CloakCore
import CloakCrypto
import CloakVault

/// The API credentials made at run time (`cloak tokens`, `POST /admin/tokens`), kept in the
/// vault's store beside its records so every node of a cluster shares them: one document under
/// ``storeName``, changed only by compare-and-set (two operators cannot lose each other's
/// change). The store keeps each token's SHA-256, never the token.
///
/// The document is authenticated as alias rows are: an HMAC with a key derived from the key
/// ring (``CredentialSeal``) over its canonical bytes (``canonical()``), kept in its `mac`
/// member. A database writer without the ring can neither mint a token (write a digest of a
/// secret it knows) nor widen one: the document no longer verifies and no node adopts it
/// (``open(_:seal:)``). The MAC also covers ``serial``, which every change raises and nodes
/// never accept going backwards (``CredentialRefresh``), so an older signed document replayed
/// into the store (a revoked token in it) is refused too.
///
/// ```json
/// {"version":2,"serial":1767225600000,"tokens":[{"id":"app","sha256":"…","scopes":["aliases:create"],
///  "created_at":1767225600,"minted_by":"admin","minter_tag":"…"}],"mac":"…"}
/// ```
///
/// Pure: parsing, rules and encoding; ``CredentialAdministration`` reads and writes the store.
package struct APICredentials: Sendable, Equatable {
    package var tokens: [ServiceConfiguration.AccessToken]
    /// The document's place in the order of changes, covered by its MAC: each change writes at
    /// least the previous serial + 1, and at least its time in milliseconds, so a change made
    /// after the store was rolled back (a restored backup) still goes forward. 0: no document.
    package var serial: Int64

    package init(tokens: [ServiceConfiguration.AccessToken] = [], serial: Int64 = 0) {
        self.tokens = tokens
        self.serial = serial
    }

    /// The store's name for the document (``AliasStore/metadata(_:)``).
    package static let storeName = "api_credentials"
    /// When any node last saw each store token presented: `{id: unix seconds}`. A hint for the
    /// listing, never a grant: it is not signed.
    package static let usedName = "api_credentials_used"

    /// Why a change was refused; `kind` decides the HTTP answer.
    package struct Error: Swift.Error, CustomStringConvertible, Equatable {
        package enum Kind: Sendable {
            case invalid, forbidden, notFound, conflict, store
            /// The store's document has no MAC: written before documents were signed (or by
            /// someone without the key ring). Nodes do not adopt it; `cloak tokens sign` does.
            case unsigned
            /// The store's document has a MAC that is not its own: written without the key ring.
            case unverified
        }
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
            case .store, .unsigned, .unverified: return CloakError(.vaultUnavailable, description)
            }
        }

        static let unsignedDocument = Error(
            "the store's API credentials are not signed (a document from before Cloak signed them, or one written "
                + "without the key ring): no node adopts them and no change is made on them; review them with "
                + "`cloak tokens list` and sign them with `cloak tokens sign`", .unsigned)
        static let unverifiedDocument = Error(
            "the store's API credentials do not verify against the key ring (the document was written without it): "
                + "no node adopts them; a running node writes back the last document it adopted, and changes made "
                + "through a node build on that one", .unverified)
        static let forgedDocumentNotSigned = Error(
            "the store's API credentials do not verify against the key ring: they were written without it and are "
                + "not signed (only a document from before signing is); a running node writes back the last one it "
                + "adopted; with no node running, delete the meta row api_credentials and create tokens again",
            .unverified)
    }

    // MARK: Rules

    /// How long an expired token stays in the document (listed as it was) before a change
    /// removes it.
    package static let expiredKeptSeconds: Int64 = 7 * 86_400

    /// Whether `token` expired more than ``expiredKeptSeconds`` before `now`.
    static func isLongExpired(_ token: ServiceConfiguration.AccessToken, now: Int64) -> Bool {
        token.expiresAt.map { $0 <= now - expiredKeptSeconds } ?? false
    }

    /// Whether a caller holding `held` may grant `scope`: it holds it (`egress:*` covers every
    /// egress route's scope).
    package static func mayGrant(_ scope: Scope, holding held: Set<Scope>) -> Bool {
        held.contains(scope) || (scope.isEgressRoute && held.contains(.egressAll))
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

    /// The document without its MAC: what the MAC covers, made again from the decoded values
    /// when a document is opened (so only what a node uses is covered, and all of it is).
    package func canonical() -> [UInt8] { JSONWriter.encode(.object(members)) }

    /// The document as the store keeps it: ``canonical()``'s members and `mac`.
    package func sealed(by seal: CredentialSeal) -> [UInt8] {
        var members = self.members
        members.append(("mac", .string(Hex.string(seal.mac(document: canonical())))))
        return JSONWriter.encode(.object(members))
    }

    private var members: [(key: String, value: JSONValue)] {
        var tokens: [JSONValue] = []
        for token in self.tokens {
            var members: [(key: String, value: JSONValue)] = [
                ("id", .string(token.id)), ("sha256", .string(Hex.string(token.sha256))),
                ("scopes", .strings(token.scopes.texts)), ("created_at", .int(Int(token.createdAt ?? 0))),
            ]
            if let expiresAt = token.expiresAt { members.append(("expires_at", .int(Int(expiresAt)))) }
            if let perMinute = token.requestsPerMinute { members.append(("requests_per_minute", .int(perMinute))) }
            if let account = token.guessAccount { members.append(("guess_account", .string(account))) }
            if let limit = token.bucketValuesPerHour { members.append(("bucket_values_per_hour", .int(limit))) }
            if let minter = token.mintedBy { members.append(("minted_by", .string(minter))) }
            if let tag = token.minterTag { members.append(("minter_tag", .string(Hex.string(tag)))) }
            if let person = token.person { members.append(("person", .string(person))) }
            tokens.append(.object(members))
        }
        return [("version", .int(2)), ("serial", .int(Int(serial))), ("tokens", .array(tokens))]
    }

    /// The store's document, verified with `seal`: what a node adopts and a change builds on.
    /// - Throws: ``Error/Kind/unsigned`` for a document without a MAC, ``Error/Kind/unverified``
    ///   for one whose MAC is not its own, ``Error/Kind/store`` for one that does not read.
    package static func open(_ bytes: [UInt8], seal: CredentialSeal) throws(Error) -> APICredentials {
        let (credentials, mac) = try read(bytes)
        guard let mac else { throw Error.unsignedDocument }
        guard seal.verifies(credentials.canonical(), mac: mac) else { throw Error.unverifiedDocument }
        return credentials
    }

    /// The store's document read without verifying it: for an operator to review before `cloak
    /// tokens sign`, never to adopt. A damaged one is an error (the caller keeps what it had).
    package static func decode(_ bytes: [UInt8]) throws(Error) -> APICredentials { try read(bytes).credentials }

    /// The document and its MAC (nil: it has none; empty: one that is not hexadecimal).
    private static func read(_ bytes: [UInt8]) throws(Error) -> (credentials: APICredentials, mac: [UInt8]?) {
        guard let document = try? JSONParser().parse(bytes), case let .array(items)? = document["tokens"] else {
            throw Error("the store's api_credentials document is not readable", .store)
        }
        var tokens: [ServiceConfiguration.AccessToken] = []
        for item in items {
            guard let id = item["id"]?.stringValue, TokenID.isValid(id),
                let digest = item["sha256"]?.stringValue.flatMap(decodeHex), digest.count == 32,
                case let .array(scopeValues)? = item["scopes"]
            else { throw Error("the store's api_credentials document has a damaged token", .store) }
            var token = ServiceConfiguration.AccessToken(
                id: id, sha256: digest, scopes: Set(scopeValues.compactMap(\.stringValue).map(Scope.init(stored:))),
                requestsPerMinute: item["requests_per_minute"]?.int64Value.map(Int.init))
            token.source = .store
            token.createdAt = item["created_at"]?.int64Value
            token.expiresAt = item["expires_at"]?.int64Value
            token.guessAccount = item["guess_account"]?.stringValue
            token.bucketValuesPerHour = item["bucket_values_per_hour"]?.int64Value.map(Int.init)
            if let person = item["person"] {
                guard let name = person.stringValue, ExportDuties.isValidPerson(name) else {
                    throw Error("the store's api_credentials document has a damaged token", .store)
                }
                token.person = name
            }
            if let minter = item["minted_by"] {
                guard let minterID = minter.stringValue, TokenID.isValid(minterID),
                    let tag = item["minter_tag"]?.stringValue.flatMap(decodeHex), tag.count == 16
                else { throw Error("the store's api_credentials document has a damaged token", .store) }
                token.mintedBy = minterID
                token.minterTag = tag
            }
            tokens.append(token)
        }
        let serial = document["serial"]?.int64Value ?? 0
        let mac = document["mac"].map { $0.stringValue.flatMap(decodeHex) ?? [] }
        return (APICredentials(tokens: tokens, serial: serial), mac)
    }

    package static func == (a: APICredentials, b: APICredentials) -> Bool { a.canonical() == b.canonical() }
}
