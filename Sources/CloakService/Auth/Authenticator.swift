import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation

/// Who sent a request: a configured token, an invalid one, or nobody.
struct Identity: Sendable {
    /// The token presented, when valid.
    let token: ServiceConfiguration.AccessToken?
    /// An `Authorization` header was sent that is not a valid bearer token.
    let rejected: Bool

    static let anonymous = Identity(token: nil, rejected: false)

    /// The token's id, when it has `scope`.
    /// - Throws: 1300 when no valid token was presented, 1301 when the token lacks the scope.
    func require(_ scope: String) throws(CloakError) -> String {
        guard let token else {
            throw CloakError(.invalidAccessToken, rejected ? "the bearer token is not valid"
                             : "a bearer token is required (Authorization: Bearer <token>)")
        }
        guard token.scopes.contains(scope) else { throw CloakError(.forbidden, "the token \(token.id) lacks the scope \(scope)") }
        return token.id
    }

    /// The caller of an endpoint that stores values: a token with `aliases:create` when
    /// `openTokenize` is off; anyone otherwise. On an open endpoint an `Authorization` that is not
    /// a Cloak token (a route's upstream credential, say) makes the caller anonymous: it gains
    /// nothing by it.
    func aliasCaller(openTokenize: Bool, requiresToken: Bool = false) throws(CloakError) -> AliasCaller {
        if requiresToken || !openTokenize { _ = try require("aliases:create") }
        return AliasCaller(mayReveal: token?.scopes.contains("aliases:reveal") ?? false, anonymous: token == nil)
    }
}

/// Bearer-token authentication against `auth.tokens`: the configuration holds only each token's
/// SHA-256, compared in constant time; scopes decide what a token may do.
struct Authenticator: Sendable {
    let tokens: [ServiceConfiguration.AccessToken]

    /// Identifies the request's caller once; handlers then ask the ``Identity`` for scopes.
    func identify(_ request: HTTPRequest) -> Identity {
        guard let header = request.header("Authorization") else { return .anonymous }
        guard header.utf8.count > 7, header.prefix(7).lowercased() == "bearer " else { return Identity(token: nil, rejected: true) }
        let presented = Digest.sha256(Array(header.dropFirst(7).trimmingCharacters(in: .whitespaces).utf8))
        // Compare against every configured token so timing does not reveal which one matched.
        var match: ServiceConfiguration.AccessToken?
        for token in tokens where constantTimeEquals(token.sha256, presented) { match = token }
        return Identity(token: match, rejected: match == nil)
    }
}

extension Authenticator {
    /// The caller of an egress door, from `Proxy-Authorization`: `Basic base64(<token id>:<token>)`
    /// or `Bearer <token>` (the client's `Authorization` belongs to the upstream). With Basic, the
    /// id must name the token whose secret it is.
    func identifyProxy(_ header: String?) -> Identity {
        guard let header else { return .anonymous }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        var claimedID: String?
        let secret: String
        if trimmed.utf8.count > 6, trimmed.prefix(6).lowercased() == "basic " {
            guard let data = Data(base64Encoded: trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)),
                let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
            else { return Identity(token: nil, rejected: true) }
            claimedID = String(text[..<colon])
            secret = String(text[text.index(after: colon)...])
        } else if trimmed.utf8.count > 7, trimmed.prefix(7).lowercased() == "bearer " {
            secret = trimmed.dropFirst(7).trimmingCharacters(in: .whitespaces)
        } else {
            return Identity(token: nil, rejected: true)
        }
        let presented = Digest.sha256(Array(secret.utf8))
        var match: ServiceConfiguration.AccessToken?
        for token in tokens where constantTimeEquals(token.sha256, presented) { match = token }
        if let claimedID, match?.id != claimedID { match = nil }
        return Identity(token: match, rejected: match == nil)
    }
}

extension Identity {
    /// Whether the token may use egress route `id` (`egress:<id>` or `egress:*`).
    func mayUseEgress(_ id: String) -> Bool {
        guard let token else { return false }
        return token.scopes.contains("egress:*") || token.scopes.contains("egress:\(id)")
    }
}
