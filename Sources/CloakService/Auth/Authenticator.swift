import CloakCore
import CloakCrypto
import CloakHTTP

/// Bearer-token authentication against `auth.tokens`: the configuration holds only each token's
/// SHA-256, compared in constant time; scopes decide what a token may do.
struct Authenticator: Sendable {
    let tokens: [ServiceConfiguration.AccessToken]

    /// The id of the token presented, if it is valid and has `scope`.
    /// - Throws: 1300 when the token is missing or unknown, 1301 when it lacks the scope.
    func authorize(_ request: HTTPRequest, scope: String) throws(CloakError) -> String {
        guard let header = request.header("Authorization"), header.count > 7,
            header.prefix(7).lowercased() == "bearer "
        else {
            throw CloakError(.invalidAccessToken, "a bearer token is required (Authorization: Bearer <token>)")
        }
        let presented = Digest.sha256(Array(header.dropFirst(7).trimmingCharacters(in: .whitespaces).utf8))
        // Compare against every configured token so timing does not reveal which one matched.
        var match: ServiceConfiguration.AccessToken?
        for token in tokens where constantTimeEquals(token.sha256, presented) { match = token }
        guard let match else { throw CloakError(.invalidAccessToken, "the bearer token is not valid") }
        guard match.scopes.contains(scope) else {
            throw CloakError(.forbidden, "the token \(match.id) lacks the scope \(scope)")
        }
        return match.id
    }
}
