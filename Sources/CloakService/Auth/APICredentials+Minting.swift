import CloakCrypto

/// Who minted whom. A token minted through `/admin/tokens` names its minter (`minted_by`) and
/// keeps a keyed tag of the minter's secret (``CredentialSeal/minterTag(_:)``): it is honoured
/// only while its minter is, with that secret. So a minted token dies with its minter whichever
/// way the minter goes: revoked (``CredentialAdministration`` also removes its tree from the
/// store), removed from `auth.tokens`, or given a new secret under the same id (a leaked one
/// replaced), as a reveal session does. Tokens made with `cloak tokens create` name no minter.
extension APICredentials {
    /// Whether a store token is honoured, and if not, why.
    package enum Standing: String, Sendable {
        /// Honoured.
        case active
        /// `auth.tokens` has a token with its id: the YAML's wins. `cloak tokens revoke` and
        /// `DELETE /admin/tokens/{id}` still remove it from the store (else it would work again
        /// the moment the YAML entry went).
        case shadowed
        /// Its minter is gone, not honoured itself, or has another secret than when it minted.
        case orphaned
    }

    /// The standing of each of `stored`'s tokens beside the YAML's `yaml`: a token minted by
    /// another holds when that one does (YAML tokens always do), with the secret it had. Without a
    /// seal no minted token holds (none could be checked). A store id named twice keeps its first.
    package static func standings(
        yaml: [ServiceConfiguration.AccessToken], stored: [ServiceConfiguration.AccessToken], seal: CredentialSeal?
    ) -> [String: Standing] {
        var standing: [String: Standing] = [:]
        // The tokens that vouch for what they minted, by id: the YAML's, then each store token found active.
        var vouching: [String: ServiceConfiguration.AccessToken] = [:]
        for token in yaml where vouching[token.id] == nil { vouching[token.id] = token }
        var pending: [ServiceConfiguration.AccessToken] = []
        for token in stored where standing[token.id] == nil {
            if vouching[token.id] != nil {
                standing[token.id] = .shadowed
            } else {
                standing[token.id] = .orphaned  // until its chain is found
                pending.append(token)
            }
        }
        // A minter may come later in the document than what it minted: settle what can be settled
        // until a pass settles nothing (what is left has no minter that holds, or a cycle).
        var settledAny = true
        while settledAny {
            settledAny = false
            var left: [ServiceConfiguration.AccessToken] = []
            for token in pending {
                guard let minterID = token.mintedBy else {
                    standing[token.id] = .active
                    vouching[token.id] = token
                    settledAny = true
                    continue
                }
                guard let minter = vouching[minterID] else {
                    left.append(token)
                    continue
                }
                settledAny = true
                if let seal, let tag = token.minterTag, constantTimeEquals(tag, seal.minterTag(minter.sha256)) {
                    standing[token.id] = .active
                    vouching[token.id] = token
                }
            }
            pending = left
        }
        return standing
    }

    /// The ids of every token `id` minted, and every token those minted, down the tree (not `id`).
    package static func descendants(of id: String, in tokens: [ServiceConfiguration.AccessToken]) -> [String] {
        var found: [String] = []
        var seen: Set<String> = [id]
        var parents = [id]
        while !parents.isEmpty {
            let level = Set(parents)
            parents = []
            for token in tokens {
                guard let minter = token.mintedBy, level.contains(minter), seen.insert(token.id).inserted else {
                    continue
                }
                found.append(token.id)
                parents.append(token.id)
            }
        }
        return found
    }
}
