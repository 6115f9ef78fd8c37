import CloakCore
import CloakCrypto
import CloakVault
import Foundation

/// Creates, lists and revokes the store's API credentials (``APICredentials``): `cloak tokens`
/// on an operator's machine, and `/admin/tokens` on a vault thread. Each change is a
/// compare-and-set of the store's document, and writes an audit line into the store's trail.
package struct CredentialAdministration {
    package let store: any AliasStore
    /// The ids of the YAML's `auth.tokens`: the store may not reuse one.
    package let yamlIDs: Set<String>

    package init(store: any AliasStore, yamlIDs: Set<String>) {
        self.store = store
        self.yamlIDs = yamlIDs
    }

    package typealias Error = APICredentials.Error

    /// What a create answers, once: the secret is in no store and no log.
    package struct Created: Sendable {
        package let token: ServiceConfiguration.AccessToken
        package let secret: String

        /// `{"id","token","expires_at"}` (`expires_at` null when it never expires).
        package var json: JSONValue {
            .object([
                ("id", .string(token.id)), ("token", .string(secret)),
                ("expires_at", token.expiresAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
            ])
        }
    }

    /// The store's tokens.
    package func list() throws -> APICredentials {
        guard let bytes = try store.metadata(APICredentials.storeName) else { return APICredentials() }
        return try APICredentials.decode(bytes)
    }

    /// A new token with `scopes`, expiring `ttlSeconds` after `now` (nil: never).
    /// - Parameters:
    ///   - guessAccount: whose guess windows the token shares (its minter's root); nil: its own.
    ///   - bucketValuesPerHour: its guess limit when below the configuration's (its minter's).
    package func create(
        id: String, scopes: Set<String>, ttlSeconds: Int64?, requestsPerMinute: Int?, now: Int64, by actor: String,
        guessAccount: String? = nil, bucketValuesPerHour: Int? = nil
    ) throws -> Created {
        guard APICredentials.isValidID(id) else { throw Error("the id must be 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard !scopes.isEmpty else { throw Error("give at least one scope") }
        for scope in scopes.sorted() where !ServiceConfiguration.isKnownScope(scope) {
            throw Error("unknown scope \(Redaction.scrub(scope, limit: 40))")
        }
        if let requestsPerMinute, !(1...RateLimit.maxPerMinute).contains(requestsPerMinute) {
            throw Error("requests_per_minute must be 1 to \(RateLimit.maxPerMinute)")
        }
        guard !yamlIDs.contains(id) else {
            throw Error("the id \(id) is a token of the configuration's auth.tokens", .conflict)
        }
        let secret = APICredentials.newSecret()
        var token = ServiceConfiguration.AccessToken(
            id: id, sha256: Digest.sha256(Array(secret.utf8)), scopes: scopes, requestsPerMinute: requestsPerMinute)
        token.source = .store
        token.createdAt = now
        token.expiresAt = ttlSeconds.map { now + $0 }
        token.guessAccount = guessAccount
        token.bucketValuesPerHour = bucketValuesPerHour
        try change { credentials throws(Error) in
            guard !credentials.tokens.contains(where: { $0.id == id }) else {
                throw Error("the id \(id) exists", .conflict)
            }
            credentials.tokens.append(token)
        }
        try audit("tokens.create", id: id, by: actor, now: now, [("scopes", .strings(scopes.sorted()))])
        return Created(token: token, secret: secret)
    }

    /// Removes the token `id`; the YAML's are refused (they are revoked by editing the YAML).
    /// `mayRevoke` decides on the token found (a caller may revoke only what it could grant).
    @discardableResult
    package func revoke(
        id: String, now: Int64, by actor: String,
        mayRevoke: (ServiceConfiguration.AccessToken) -> Bool = { _ in true }
    ) throws -> ServiceConfiguration.AccessToken {
        guard !yamlIDs.contains(id) else {
            throw Error("the token is configured in auth.tokens: remove it there and reload", .forbidden)
        }
        var removed: ServiceConfiguration.AccessToken?
        try change { credentials throws(Error) in
            guard let index = credentials.tokens.firstIndex(where: { $0.id == id }) else {
                throw Error("no such token", .notFound)
            }
            guard mayRevoke(credentials.tokens[index]) else {
                throw Error("the token holds scopes the caller does not", .forbidden)
            }
            removed = credentials.tokens.remove(at: index)
        }
        try audit("tokens.revoke", id: id, by: actor, now: now, [])
        return removed!
    }

    /// When any node last saw each store token presented (``recordUse(_:)``).
    package func lastUsed() throws -> [String: Int64] {
        Self.marks(try store.metadata(APICredentials.usedName))
    }

    /// The `{id: unix seconds}` document; a damaged one reads as empty (it is only a hint).
    private static func marks(_ bytes: [UInt8]?) -> [String: Int64] {
        guard let bytes, case let .object(members)? = try? JSONParser().parse(bytes) else { return [:] }
        var out: [String: Int64] = [:]
        for (id, value) in members { if let t = APICredentials.int(value) { out[id] = t } }
        return out
    }

    /// Merges a node's marks of use into the store's (the later of each).
    package func recordUse(_ used: [String: Int64]) throws {
        for _ in 0..<8 {
            let old = try store.metadata(APICredentials.usedName)
            var merged = Self.marks(old)
            for (id, t) in used where t > merged[id] ?? 0 { merged[id] = t }
            let encoded = JSONWriter.encode(
                .object(merged.sorted { $0.key < $1.key }.map { ($0.key, .int(Int($0.value))) }))
            if encoded == old { return }
            if try store.replaceMetadata(APICredentials.usedName, expected: old, with: encoded) { return }
        }
    }

    /// `{"data": [{id, scopes, source, created_at, expires_at, last_used_at, requests_per_minute}]}`:
    /// never a secret, nor a digest.
    package static func listing(
        yaml: [ServiceConfiguration.AccessToken], stored: [ServiceConfiguration.AccessToken], used: [String: Int64]
    ) -> JSONValue {
        let items = (yaml + stored).map { token -> JSONValue in
            .object([
                ("id", .string(token.id)), ("scopes", .strings(token.scopes.sorted())),
                ("source", .string(token.source.rawValue)),
                ("created_at", token.createdAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("expires_at", token.expiresAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("last_used_at", used[token.id].map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("requests_per_minute", token.requestsPerMinute.map { .int($0) } ?? .null),
            ])
        }
        return .object([("data", .array(items))])
    }

    private func change(_ body: (inout APICredentials) throws(Error) -> Void) throws {
        for _ in 0..<8 {
            let old = try store.metadata(APICredentials.storeName)
            var credentials =
                try old.map { bytes throws(Error) in try APICredentials.decode(bytes) } ?? APICredentials()
            try body(&credentials)
            if try store.replaceMetadata(APICredentials.storeName, expected: old, with: credentials.encoded()) {
                return
            }
        }
        throw Error("the store's credentials kept changing under this change; try again", .store)
    }

    private func audit(_ action: String, id: String, by actor: String, now: Int64, _ fields: [(String, JSONValue)])
        throws
    {
        var members: [(key: String, value: JSONValue)] = [
            ("ts", .string(RevealedRecord.iso8601(now))), ("level", .string("info")), ("msg", .string("audit")),
            ("action", .string(action)), ("token_id", .string(id)),
        ]
        for (key, value) in fields { members.append((key, value)) }
        members.append(("by", .string(actor)))
        try store.appendKeyAudit(String(decoding: JSONWriter.encode(.object(members)), as: UTF8.self), at: now)
    }
}
