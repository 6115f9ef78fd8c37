import CloakCore
import CloakVault

extension CredentialAdministration {
    /// When any node last saw each store token presented (``recordUse(_:)``).
    package func lastUsed() throws -> [String: Int64] {
        Self.marks(try store.metadata(APICredentials.usedName))
    }

    /// The `{id: unix seconds}` document; a damaged one reads as empty (it is only a hint).
    private static func marks(_ bytes: [UInt8]?) -> [String: Int64] {
        guard let bytes, case let .object(members)? = try? JSONParser().parse(bytes) else { return [:] }
        var out: [String: Int64] = [:]
        for (id, value) in members { if let t = value.int64Value { out[id] = t } }
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

    /// `{"data": [{id, scopes, source, state, minted_by, created_at, expires_at, last_used_at,
    /// requests_per_minute}]}`: never a secret, nor a digest. `state` is `active`, or for a store
    /// token `shadowed` (the YAML has its id) or `orphaned` (its minter no longer stands:
    /// ``APICredentials/standings(yaml:stored:seal:)``); `minted_by` the id of the token that
    /// minted it (null: the YAML's, or made with `cloak tokens create`).
    /// - Parameter visible: which tokens the caller may see (a `tokens:admin` token sees only
    ///   tokens it could have granted).
    package static func listing(
        yaml: [ServiceConfiguration.AccessToken], stored: [ServiceConfiguration.AccessToken], used: [String: Int64],
        seal: CredentialSeal?, visible: (ServiceConfiguration.AccessToken) -> Bool = { _ in true }
    ) -> JSONValue {
        let standings = APICredentials.standings(yaml: yaml, stored: stored, seal: seal)
        let items = (yaml + stored).filter(visible).map { token -> JSONValue in
            let state = token.source == .yaml ? APICredentials.Standing.active : standings[token.id] ?? .orphaned
            return .object([
                ("id", .string(token.id)), ("scopes", .strings(token.scopes.texts)),
                ("source", .string(token.source.rawValue)), ("state", .string(state.rawValue)),
                ("minted_by", token.mintedBy.map { .string($0) } ?? .null),
                ("person", token.person.map { .string($0) } ?? .null),
                ("created_at", token.createdAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("expires_at", token.expiresAt.map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("last_used_at", used[token.id].map { .string(RevealedRecord.iso8601($0)) } ?? .null),
                ("requests_per_minute", token.requestsPerMinute.map { .int($0) } ?? .null),
            ])
        }
        return .object([("data", .array(items))])
    }
}
