import CloakCore
import CloakCrypto

/// What a granted CONNECT tunnel carries for every request inside it: the token's id and the
/// SHA-256 its secret had when the tunnel was granted. Each request is identified by both, so a
/// token whose secret was replaced (a leaked one rotated in the YAML, or revoked and made again
/// under its id) no longer speaks through a tunnel opened with the old secret, as a reveal
/// session dies with the secret that minted it.
enum TunnelGrant {
    static func make(_ token: ServiceConfiguration.AccessToken) -> String {
        token.id + "\n" + Hex.string(token.sha256)
    }

    /// The grant's token, when it is still configured with the same secret (and not expired).
    static func token(_ grant: String, in directory: TokenDirectory) -> ServiceConfiguration.AccessToken? {
        guard let newline = grant.lastIndex(of: "\n") else { return nil }
        let id = String(grant[..<newline])
        let granted = Array(grant.utf8[grant.utf8.index(after: newline)...])
        guard let token = directory.token(id: id),
            constantTimeEquals(Array(Hex.string(token.sha256).utf8), granted)
        else {
            return nil
        }
        return token
    }
}
