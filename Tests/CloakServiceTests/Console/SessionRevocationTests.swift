import CloakTesting
import Foundation
import Testing

/// Issue 34, defect 4: a reveal session is worth no more than the token that minted it. Against
/// `cloak serve` processes restarted on one SQLite vault with the token removed or narrowed.
@Suite(.serialized, .tags(.processes, .sockets, .browser)) struct SessionRevocationTests {
    static let auth = [("Authorization", "Bearer \(CloakNode.token)")]

    static func reveal(_ node: CloakNode, session: String, alias: String) throws -> RawHTTPClient.Response {
        try node.client().request(
            "GET", "/elements/v1/reveal",
            headers: [("Cloak-Session", session), ("Cloak-Alias", alias), ("Sec-Fetch-Site", "same-origin")])
    }

    @Test(arguments: [
        ("nodes", "aliases:create", CloakNode.token),  // the token lost aliases:reveal
        ("another", "aliases:create, aliases:reveal", CloakNode.token),  // the token was removed
        ("nodes", "aliases:create, aliases:reveal", "a-new-secret"),  // a leaked secret was replaced
    ])
    func aSessionDiesWithItsTokensRevealScope(tokenID: String, scopes: String, secret: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = "sqlite:\(directory.path)/cloak.db"
        let card = "4111111111111111"
        let first = try CloakNode(store: store, directory: directory.path)
        let alias = try #require(MultiNodeTests.alias(card, on: first))
        let minted = try first.client().request(
            "POST", "/elements/sessions", json: #"{"aliases":["\#(alias)"],"ttl_s":600}"#, headers: Self.auth)
        let session = try #require(minted.json?["session"] as? String, "\(minted.text)")
        #expect(try Self.reveal(first, session: session, alias: alias).json?["value"] as? String == card)
        first.stop()

        let second = try CloakNode(
            store: store, directory: directory.path, tokenID: tokenID, scopes: scopes, secret: secret)
        defer { second.stop() }
        let refused = try Self.reveal(second, session: session, alias: alias)
        #expect(refused.status == 403 && refused.errorCode == 1301, "\(refused.text)")
        #expect(refused.text.contains(#""reason":"token_revoked""#) && !refused.text.contains(card))
        // The audit line (written by the log thread: polled for).
        let deadline = Date().addingTimeInterval(10)
        while !second.log.contains(#""result":"token_revoked""#) && Date() < deadline { usleep(10_000) }
        #expect(second.log.contains(#""result":"token_revoked""#) && !second.log.contains(card))
    }
}
