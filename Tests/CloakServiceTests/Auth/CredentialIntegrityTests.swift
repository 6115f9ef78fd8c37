import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakService

/// Issue 44, items 2, 7 and 10, end to end against the real server on one SQLite vault: a
/// database writer cannot mint a token nor bring a revoked one back; a node audits what it
/// adopts; a revoked minter takes its tree; a narrow admin lists only what it could grant;
/// secrets and revealed values are not cached.
@Suite(.serialized, .tags(.sockets)) struct CredentialIntegrityTests {
    static let adminSecret = "integrity-admin-secret"
    static let narrowSecret = "integrity-narrow-admin-secret"
    /// The secret a database writer knows and writes the digest of.
    static let intruderSecret = "intruder-known-secret"
    static let card = "4111111111111111"

    static func hex(_ secret: String) -> String { Hex.string(Digest.sha256(Array(secret.utf8))) }

    static func bearer(_ secret: String) -> [(String, String)] { [("Authorization", "Bearer \(secret)")] }

    /// The test configuration with two `tokens:admin` tokens: `admin` (may also reveal) and
    /// `narrow` (may only create).
    static func server() throws -> TestServer {
        let admins =
            "{id: admin, sha256: \"\(hex(adminSecret))\", scopes: [tokens:admin, aliases:create, aliases:reveal]}, "
            + "{id: narrow, sha256: \"\(hex(narrowSecret))\", scopes: [tokens:admin, aliases:create]}, "
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [", with: "  tokens: [" + admins)
        return try TestServer(yaml: yaml)
    }

    static func mint(_ server: TestServer, _ body: String, as secret: String = adminSecret) throws
        -> RawHTTPClient.Response
    {
        try server.client().request("POST", "/admin/tokens", json: body, headers: bearer(secret))
    }

    static func secret(_ response: RawHTTPClient.Response) -> String { (response.json?["token"] as? String) ?? "" }

    static func alias(on server: TestServer) throws -> String {
        let r = try server.client().request(
            "POST", "/aliases", json: #"{"data":[{"value":"\#(card)","format":"UUID"}]}"#,
            headers: bearer(TestServer.fullToken))
        let aliases = (r.json?["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]]
        return try #require(aliases?.first?["alias"] as? String, "\(r.text)")
    }

    static func reveal(_ alias: String, on server: TestServer, as secret: String) throws -> RawHTTPClient.Response {
        try server.client().request("GET", "/aliases/\(alias)", headers: bearer(secret))
    }

    static func listing(_ server: TestServer, as secret: String = adminSecret) throws -> [[String: Any]] {
        let r = try server.client().request("GET", "/admin/tokens", headers: bearer(secret))
        return (r.json?["data"] as? [[String: Any]]) ?? []
    }

    /// The store as a database writer opens it: the same file, a connection of its own, no key.
    static func database(_ server: TestServer) throws -> SQLiteAliasStore {
        try SQLiteAliasStore(path: "\(server.directory.path)/cloak.db")
    }

    /// Issue 44, item 2: a row written into the database (`sqlite3 cloak.db "UPDATE meta SET
    /// value = … WHERE name = 'api_credentials'"`) holding the digest of a secret the writer
    /// knows, with `aliases:reveal`, gave a working token within 3 s.
    @Test func aTokenWrittenIntoTheDatabaseRevealsNothing() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let alias = try Self.alias(on: server)
            let made = try Self.mint(server, #"{"id":"app","scopes":["aliases:reveal"]}"#)
            #expect(made.status == 201, "\(made.text)")
            #expect(try Self.reveal(alias, on: server, as: Self.secret(made)).status == 200)

            let database = try Self.database(server)
            let good = try #require(try database.metadata(APICredentials.storeName))
            var intruder = ServiceConfiguration.AccessToken(
                id: "intruder", sha256: Digest.sha256(Array(Self.intruderSecret.utf8)), scopes: ["aliases:reveal"])
            intruder.source = .store
            var forged = try APICredentials.decode(good)
            forged.tokens.append(intruder)
            forged.serial += 1
            // With a MAC of the writer's own key, with none, and as an older Cloak wrote it.
            let legacy =
                #"{"version":1,"tokens":[{"id":"intruder","sha256":""# + Self.hex(Self.intruderSecret)
                + #"","scopes":["aliases:reveal"],"created_at":1}]}"#
            let attempts = [
                forged.sealed(by: CredentialSeal(ring: KeyRing.generate())), forged.canonical(), Array(legacy.utf8),
            ]
            for bytes in attempts {
                try database.setMetadata(APICredentials.storeName, bytes)
                refresh.refreshAndWait()
                let refused = try Self.reveal(alias, on: server, as: Self.intruderSecret)
                #expect(refused.status == 401 && !refused.text.contains(Self.card), "\(refused.text)")
                #expect(
                    try Self.reveal(alias, on: server, as: Self.secret(made)).status == 200, "the last good one holds")
                #expect(
                    try database.metadata(APICredentials.storeName) == good, "the node put its last good document back")
            }
            let log = server.logs.text
            #expect(log.contains(#""reason":"unverified""#) && log.contains(#""reason":"unsigned""#), "\(log)")
            #expect(log.contains(#""action":"tokens_adopt""#) && log.contains(#""result":"refused""#))
            #expect(log.contains("cloak tokens sign") && log.contains("put this node's API credentials document back"))
            #expect(!log.contains(Self.intruderSecret) && !log.contains(Self.hex(Self.intruderSecret)))
            #expect(!log.contains(#""added":"intruder""#))
        }
    }

    /// Replaying an older signed document (one that still held a revoked token) is refused: the
    /// revoked token stays revoked, and the node puts the newer document back.
    @Test func anOlderSignedDocumentPutBackIsRefused() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let alias = try Self.alias(on: server)
            let leaked = try Self.mint(server, #"{"id":"leaked","scopes":["aliases:reveal"]}"#)
            #expect(leaked.status == 201)
            let database = try Self.database(server)
            let older = try #require(try database.metadata(APICredentials.storeName))
            let revoked = try server.client().request(
                "DELETE", "/admin/tokens/leaked", headers: Self.bearer(Self.adminSecret))
            #expect(revoked.status == 204)
            let newer = try #require(try database.metadata(APICredentials.storeName))
            #expect(try Self.reveal(alias, on: server, as: Self.secret(leaked)).status == 401)

            try database.setMetadata(APICredentials.storeName, older)
            refresh.refreshAndWait()
            #expect(try Self.reveal(alias, on: server, as: Self.secret(leaked)).status == 401)
            #expect(try database.metadata(APICredentials.storeName) == newer)
            #expect(server.logs.text.contains(#""reason":"rollback""#))
            // Wiping the document in the database revokes nothing the node holds either (it is put back).
            let kept = try Self.mint(server, #"{"id":"kept","scopes":["aliases:reveal"]}"#)
            let current = try #require(try database.metadata(APICredentials.storeName))
            try database.setMetadata(APICredentials.storeName, Array("{}".utf8))
            refresh.refreshAndWait()
            #expect(try Self.reveal(alias, on: server, as: Self.secret(kept)).status == 200)
            #expect(try database.metadata(APICredentials.storeName) == current)
        }
    }

    /// A replayed older document (still holding a revoked token), followed at once by a change
    /// through the node: the change builds on the document the node adopted, not on the replay,
    /// so the revoked token is not signed anew. (Review of issue 44: it was, with a fresh serial.)
    @Test func aChangeRightAfterAReplayDoesNotSignTheReplayedTokensAgain() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let alias = try Self.alias(on: server)
            let leaked = try Self.mint(server, #"{"id":"leaked","scopes":["aliases:reveal"]}"#)
            #expect(leaked.status == 201)
            let database = try Self.database(server)
            let older = try #require(try database.metadata(APICredentials.storeName))
            let revoked = try server.client().request(
                "DELETE", "/admin/tokens/leaked", headers: Self.bearer(Self.adminSecret))
            #expect(revoked.status == 204)
            refresh.refreshAndWait()
            try database.setMetadata(APICredentials.storeName, older)
            let other = try Self.mint(server, #"{"id":"other","scopes":["aliases:reveal"]}"#)
            #expect(other.status == 201)
            refresh.refreshAndWait()
            #expect(try Self.reveal(alias, on: server, as: Self.secret(leaked)).status == 401)
            #expect(try Self.reveal(alias, on: server, as: Self.secret(other)).status == 200)
            let stored = String(decoding: try #require(try database.metadata(APICredentials.storeName)), as: UTF8.self)
            #expect(!stored.contains(#""leaked""#) && stored.contains(#""other""#))
        }
    }

    /// A forged document written as TEXT (as sqlite3's shell and Python's sqlite3 do): the node's
    /// compare-and-set still matches it and puts the good document back, and revoking still works.
    @Test func aForgedDocumentWrittenAsTextIsPutBackAndRevocationGoesOn() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let alias = try Self.alias(on: server)
            let victim = try Self.mint(server, #"{"id":"victim","scopes":["aliases:reveal"]}"#)
            #expect(victim.status == 201)
            refresh.refreshAndWait()
            let database = try Self.database(server)
            let good = try #require(try database.metadata(APICredentials.storeName))
            let forged = String(decoding: good, as: UTF8.self).replacingOccurrences(of: "victim", with: "victin")
            let write = try EgressFixture.run(
                "python3",
                [
                    "-c",
                    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                        + "c.execute('UPDATE meta SET value = ? WHERE name = ?', (sys.argv[2], sys.argv[3])); c.commit()",
                    "\(server.directory.path)/cloak.db", forged, APICredentials.storeName,
                ])
            #expect(write.status == 0, "\(write.err)")
            refresh.refreshAndWait()
            #expect(try database.metadata(APICredentials.storeName) == good, "the node put its document back")
            let revoked = try server.client().request(
                "DELETE", "/admin/tokens/victim", headers: Self.bearer(Self.adminSecret))
            #expect(revoked.status == 204, "\(revoked.text)")
            #expect(try Self.reveal(alias, on: server, as: Self.secret(victim)).status == 401)
        }
    }

    /// A document from before documents were signed is refused until an operator signs it with
    /// the ring (`cloak tokens sign`); changes over HTTP are refused meanwhile, with that advice.
    @Test func anUnsignedDocumentFromBeforeWorksOnceAnOperatorSignsIt() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let alias = try Self.alias(on: server)
            let database = try Self.database(server)
            let legacy =
                #"{"version":1,"tokens":[{"id":"legacy","sha256":""# + Self.hex("legacy-secret")
                + #"","scopes":["aliases:reveal"],"created_at":1}]}"#
            try database.setMetadata(APICredentials.storeName, Array(legacy.utf8))
            refresh.refreshAndWait()
            #expect(try Self.reveal(alias, on: server, as: "legacy-secret").status == 401)
            #expect(server.logs.text.contains("are not signed") && server.logs.text.contains("cloak tokens sign"))
            let refused = try Self.mint(server, #"{"id":"new","scopes":["aliases:reveal"]}"#)
            #expect(refused.status == 503 && refused.text.contains("cloak tokens sign"), "\(refused.text)")

            // What `cloak tokens sign --yes` does: the ring vault.keys names, read as the command reads it.
            var settings = ServiceConfiguration.VaultSettings()
            settings.store = "sqlite:\(server.directory.path)/cloak.db"
            settings.keys = "file:\(server.directory.path)/keys.json"
            let ring = try VaultBootstrap.keys(
                settings, environment: [:], logger: nil, store: database, firstRun: false
            ).ring
            let signer = CredentialAdministration(store: database, yamlIDs: [], seal: CredentialSeal(ring: ring))
            #expect(try signer.review().credentials.tokens.map(\.id) == ["legacy"])
            #expect(try signer.sign(now: Int64(Date().timeIntervalSince1970), by: "cli:op")?.ids == ["legacy"])
            refresh.refreshAndWait()
            #expect(try Self.reveal(alias, on: server, as: "legacy-secret").status == 200)
            #expect(server.logs.text.contains(#""added":"legacy""#) && server.logs.text.contains(#""origin":"store""#))
            #expect(try Self.mint(server, #"{"id":"new","scopes":["aliases:reveal"]}"#).status == 201)
        }
    }

    /// Issue 44, item 7: a node logs every adoption (ids, serials, whose change), never a secret.
    @Test func aNodeAuditsTheChangesItAdopts() throws {
        try withTestServer(Self.server()) { server throws in
            let refresh = try #require(server.service.credentialRefresh)
            let own = try Self.mint(server, #"{"id":"here","scopes":["aliases:create"]}"#)
            #expect(own.status == 201)
            #expect(
                server.logs.text.contains(#""added":"here""#) && server.logs.text.contains(#""origin":"this_node""#))
            // A change made elsewhere (`cloak tokens` beside the node): its own store connection and ring.
            let elsewhere = CredentialAdministration(
                store: try Self.database(server), yamlIDs: ["admin", "narrow"],
                seal: CredentialSeal(vault: server.vault))
            let batch = try elsewhere.create(
                id: "batch", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil,
                now: Int64(Date().timeIntervalSince1970), by: "cli:op")
            refresh.refreshAndWait()
            let adoption = server.logs.lines.first { $0.contains(#""action":"tokens_adopt""#) && $0.contains("batch") }
            let line = try #require(adoption)
            #expect(line.contains(#""added":"batch""#) && line.contains(#""origin":"store""#), "\(line)")
            #expect(line.contains(#""serial":"\#(batch.serial)""#))
            _ = try elsewhere.revoke(id: "batch", now: Int64(Date().timeIntervalSince1970), by: "cli:op")
            refresh.refreshAndWait()
            #expect(server.logs.lines.contains { $0.contains(#""removed":"batch""#) })
            #expect(!server.logs.text.contains(batch.secret) && !server.logs.text.contains(Self.hex(batch.secret)))
        }
    }

    /// Issue 44, item 10: revoking a token revokes every token minted under it, down the tree,
    /// and the listing says who minted each.
    @Test func revokingAMinterRevokesEveryTokenMintedUnderIt() throws {
        try withTestServer(Self.server()) { server throws in
            let alias = try Self.alias(on: server)
            let root = try Self.mint(server, #"{"id":"root","scopes":["tokens:admin","aliases:reveal"]}"#)
            let child = try Self.mint(
                server, #"{"id":"child","scopes":["tokens:admin","aliases:reveal"]}"#, as: Self.secret(root))
            let grandchild = try Self.mint(
                server, #"{"id":"grandchild","scopes":["aliases:reveal"]}"#, as: Self.secret(child))
            let sibling = try Self.mint(server, #"{"id":"sibling","scopes":["aliases:reveal"]}"#)
            for made in [root, child, grandchild, sibling] { #expect(made.status == 201, "\(made.text)") }
            for made in [root, child, grandchild] {
                #expect(try Self.reveal(alias, on: server, as: Self.secret(made)).status == 200)
            }
            let minters = Dictionary(
                uniqueKeysWithValues: try Self.listing(server).compactMap { item in
                    (item["id"] as? String).map { ($0, item["minted_by"] as? String ?? "-") }
                })
            #expect(minters["root"] == "admin" && minters["child"] == "root" && minters["grandchild"] == "child")
            #expect(minters["admin"] == "-")

            let revoked = try server.client().request(
                "DELETE", "/admin/tokens/root", headers: Self.bearer(Self.adminSecret))
            #expect(revoked.status == 204)
            for made in [root, child, grandchild] {
                let refused = try Self.reveal(alias, on: server, as: Self.secret(made))
                #expect(refused.status == 401 && !refused.text.contains(Self.card))
            }
            #expect(try Self.reveal(alias, on: server, as: Self.secret(sibling)).status == 200)
            let ids = Set(try Self.listing(server).compactMap { $0["id"] as? String })
            #expect(ids.isDisjoint(with: ["root", "child", "grandchild"]) && ids.contains("sibling"))
            #expect(Poll.until { server.logs.text.contains(#""descendants":"child,grandchild""#) })
        }
    }

    /// Issue 44, item 10: a narrow `tokens:admin` token lists only the tokens it could grant.
    @Test func aNarrowAdminListsOnlyWhatItCouldGrant() throws {
        try withTestServer(Self.server()) { server throws in
            #expect(try Self.mint(server, #"{"id":"wide","scopes":["aliases:reveal"]}"#).status == 201)
            #expect(
                try Self.mint(server, #"{"id":"small","scopes":["aliases:create"]}"#, as: Self.narrowSecret).status
                    == 201)
            let narrow = try Self.listing(server, as: Self.narrowSecret)
            #expect(Set(narrow.compactMap { $0["id"] as? String }) == ["narrow", "creator", "small"], "\(narrow)")
            #expect(narrow.allSatisfy { ($0["scopes"] as? [String])?.contains("aliases:reveal") == false })
            // `admin` holds no aliases:lookup: it does not see `full` (nor `looker`) either.
            let wide = Set(try Self.listing(server).compactMap { $0["id"] as? String })
            #expect(wide == ["admin", "narrow", "creator", "revealer", "small", "wide"], "\(wide)")
            // Revoking a token it cannot see is answered as for one that does not exist, and
            // changes nothing.
            let hidden = try server.client().request(
                "DELETE", "/admin/tokens/wide", headers: Self.bearer(Self.narrowSecret))
            let unknown = try server.client().request(
                "DELETE", "/admin/tokens/nobody", headers: Self.bearer(Self.narrowSecret))
            #expect(hidden.status == 404 && unknown.status == 404, "\(hidden.text) \(unknown.text)")
            #expect(hidden.errorCode == unknown.errorCode && hidden.text.contains("no such token"))
            #expect(try Self.listing(server).contains { $0["id"] as? String == "wide" })
        }
    }

    /// Issue 44, item 10: a token's create answer and a reveal's are never cached.
    @Test func createAndRevealAnswersAreNotCached() throws {
        try withTestServer(Self.server()) { server throws in
            let alias = try Self.alias(on: server)
            let made = try Self.mint(server, #"{"id":"fresh","scopes":["aliases:reveal"]}"#)
            #expect(made.status == 201 && made.header("Cache-Control") == "no-store")
            let one = try Self.reveal(alias, on: server, as: TestServer.fullToken)
            #expect(one.status == 200 && one.header("Cache-Control") == "no-store")
            let many = try server.client().request(
                "GET", "/aliases?q=\(alias)", headers: Self.bearer(TestServer.fullToken))
            #expect(many.status == 200 && many.header("Cache-Control") == "no-store", "\(many.text)")
            // Issue 55, item 12: the token listing too; the node's health and metrics are never
            // served from a cache without asking.
            let listing = try server.client().request("GET", "/admin/tokens", headers: Self.bearer(Self.adminSecret))
            #expect(listing.status == 200 && listing.header("Cache-Control") == "no-store", "\(listing.text)")
            for path in ["/healthz", "/readyz", "/metrics"] {
                let answer = try server.client().request("GET", path)
                #expect(answer.header("Cache-Control") == "no-cache", "\(path): \(answer.status)")
            }
        }
    }

    /// Issue 55, item 12: a 401 says how to authenticate (RFC 9110 11.6.1, RFC 6750 3).
    @Test func a401SaysBearerAndWhetherTheTokenWasInvalid() throws {
        try withTestServer(Self.server()) { server throws in
            let none = try server.client().request("GET", "/aliases/tok_x")
            #expect(none.status == 401 && none.header("WWW-Authenticate") == "Bearer", "\(none.headers)")
            let wrong = try server.client().request("GET", "/admin/tokens", headers: Self.bearer("not-a-token"))
            #expect(wrong.status == 401)
            #expect(wrong.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
            // A 403 (a token without the scope) is no 401.
            let narrow = try server.client().request("GET", "/admin/tokens", headers: Self.bearer(TestServer.fullToken))
            #expect(narrow.status == 403 && narrow.header("WWW-Authenticate") == nil)
        }
    }
}
