import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakService

/// The rules of run-time API credentials, without a server.
@Suite struct APICredentialRuleTests {
    @Test(
        arguments: [
            ("90d", 7_776_000), ("12h", 43_200), ("30m", 1_800), ("3600", 3_600), ("60s", 60), ("3650d", 315_360_000),
        ] as [(String, Int64)])
    func ttlsRead(text: String, seconds: Int64) {
        #expect(APICredentials.parseTTL(text) == seconds)
    }

    @Test(arguments: ["", "d", "59s", "0", "-5d", "3651d", "1.5d", "1w", "99999999999", "１d", "5 d", "d5"])
    func badTTLsAreRefused(text: String) {
        #expect(APICredentials.parseTTL(text) == nil)
    }

    @Test func aCallerGrantsOnlyWhatItHolds() {
        let held: Set<Scope> = ["aliases:create", "egress:*", "tokens:admin"]
        #expect(APICredentials.mayGrant("aliases:create", holding: held))
        #expect(APICredentials.mayGrant("egress:psp", holding: held))
        #expect(!APICredentials.mayGrant("aliases:reveal", holding: held))
        #expect(!APICredentials.mayGrant("egress:psp", holding: ["egress:other"]))
    }

    @Test func secretsAreLongRandomAndURLSafe() {
        let secrets = (0..<50).map { _ in APICredentials.newSecret() }
        #expect(Set(secrets).count == 50)
        for secret in secrets {
            #expect(secret.hasPrefix("ck_") && secret.utf8.count == 46)
            #expect(secret.dropFirst(3).allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        }
    }

    @Test func theStoredDocumentRoundTripsAndKeepsNoSecret() throws {
        var token = ServiceConfiguration.AccessToken(
            id: "backend", sha256: Digest.sha256(Array("s3cret".utf8)), scopes: ["aliases:create"],
            requestsPerMinute: 60)
        token.source = .store
        token.createdAt = 1_700_000_000
        token.expiresAt = 1_800_000_000
        token.mintedBy = "admin"
        token.minterTag = Array(repeating: 7, count: 16)
        let document = APICredentials(tokens: [token], serial: 1_700_000_000_000)
        let seal = CredentialSeal(ring: KeyRing.generate())
        let bytes = document.sealed(by: seal)
        #expect(try APICredentials.open(bytes, seal: seal) == document)
        #expect(try APICredentials.decode(bytes) == document)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("s3cret"))
        for damaged in ["", "{}", #"{"tokens":[{"id":"x"}]}"#, #"{"tokens":[{"id":"a b","sha256":"00","scopes":[]}]}"#]
        {
            #expect(throws: APICredentials.Error.self) { try APICredentials.decode(Array(damaged.utf8)) }
        }
    }

    @Test func anExpiredTokenIsRefusedAtItsSecondAndTheYAMLWinsAnIDClash() {
        let clock = ClockBox(1_000)
        let yaml = ServiceConfiguration.AccessToken(id: "admin", sha256: Digest.sha256(Array("a".utf8)), scopes: [])
        let directory = TokenDirectory(yaml: [yaml], now: { clock.now })
        var stored = ServiceConfiguration.AccessToken(
            id: "app", sha256: Digest.sha256(Array("b".utf8)), scopes: ["aliases:create"])
        stored.source = .store
        stored.expiresAt = 1_010
        var clash = ServiceConfiguration.AccessToken(id: "admin", sha256: Digest.sha256(Array("c".utf8)), scopes: [])
        clash.source = .store
        #expect(directory.adopt([stored, clash]) == ["admin"])
        #expect(directory.token(digest: Digest.sha256(Array("b".utf8)))?.id == "app")
        #expect(directory.token(digest: Digest.sha256(Array("c".utf8))) == nil)
        clock.now = 1_009
        #expect(directory.token(id: "app") != nil)
        clock.now = 1_010
        #expect(directory.token(digest: Digest.sha256(Array("b".utf8))) == nil)
        #expect(directory.token(id: "app") == nil)
        #expect(directory.lastUsed["app"] == 1_009)
    }

    final class ClockBox: @unchecked Sendable {
        var now: Int64
        init(_ now: Int64) { self.now = now }
    }
}

/// `CredentialAdministration` against a real SQLite store: create, list, revoke, and what it refuses.
@Suite struct CredentialAdministrationTests {
    /// Issue 56: the document every node reads and indexes again on each change holds the tokens
    /// that live, not every token ever minted. One expired within the week is still listed; one
    /// expired longer goes with the next change, audited.
    /// An administration over a new SQLite store in `directory`.
    static func administration(in directory: TemporaryDirectory, yamlIDs: Set<String>) throws
        -> CredentialAdministration
    {
        var settings = ServiceConfiguration.VaultSettings()
        settings.store = "sqlite:\(directory.path)/cloak.db"
        return CredentialAdministration(
            store: try VaultBootstrap.store(settings), yamlIDs: yamlIDs, seal: CredentialSeal(ring: KeyRing.generate()))
    }

    @Test func tokensLongExpiredLeaveTheDocumentWithTheNextChange() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let admin = try Self.administration(in: directory, yamlIDs: [])
        for id in ["brief", "kept"] {
            _ = try admin.create(
                id: id, scopes: ["aliases:create"], ttlSeconds: id == "brief" ? 60 : nil, requestsPerMinute: nil,
                now: 1_000, by: "tester")
        }
        let week = APICredentials.expiredKeptSeconds
        _ = try admin.create(
            id: "later", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1_060 + week - 1,
            by: "tester")
        #expect(try admin.list().tokens.map(\.id).sorted() == ["brief", "kept", "later"])
        _ = try admin.create(
            id: "last", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1_060 + week,
            by: "tester")
        #expect(try admin.list().tokens.map(\.id).sorted() == ["kept", "last", "later"])
        let trail = try admin.store.keyAudit(limit: 10).joined(separator: "\n")
        #expect(trail.contains("tokens.expire") && trail.contains("brief"))
    }

    @Test func createListRevokeOnARealStore() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let admin = try Self.administration(in: directory, yamlIDs: ["admin"])
        let created = try admin.create(
            id: "backend", scopes: ["aliases:create"], ttlSeconds: 86_400, requestsPerMinute: 600, now: 1_000,
            by: "tester")
        #expect(created.token.sha256 == Digest.sha256(Array(created.secret.utf8)))
        #expect(created.token.expiresAt == 87_400)
        let listed = try admin.list()
        #expect(listed.tokens.map(\.id) == ["backend"])
        #expect(listed.tokens[0].scopes == ["aliases:create"] && listed.tokens[0].requestsPerMinute == 600)

        #expect(throws: APICredentials.Error.self) {
            try admin.create(
                id: "backend", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1, by: "t")
        }
        #expect(throws: APICredentials.Error.self) {
            try admin.create(
                id: "admin", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1, by: "t")
        }
        #expect(throws: APICredentials.Error.self) {
            try admin.create(
                id: "x", scopes: ["aliases:everything"], ttlSeconds: nil, requestsPerMinute: nil, now: 1, by: "t")
        }
        #expect(throws: APICredentials.Error.self) {
            try admin.create(
                id: "bad id", scopes: ["aliases:create"], ttlSeconds: nil, requestsPerMinute: nil, now: 1, by: "t")
        }
        #expect(throws: APICredentials.Error.self) { try admin.revoke(id: "admin", now: 2, by: "t") }
        #expect(throws: APICredentials.Error.self) { try admin.revoke(id: "nobody", now: 2, by: "t") }
        try admin.revoke(id: "backend", now: 2, by: "tester")
        #expect(try admin.list().tokens.isEmpty)

        // The trail: both changes, never the secret.
        let trail = try admin.store.keyAudit(limit: 10).joined(separator: "\n")
        #expect(trail.contains("tokens.create") && trail.contains("tokens.revoke"))
        #expect(!trail.contains(created.secret))
    }
}

/// Credentials made and revoked at run time, honoured by every node of a PostgreSQL cluster
/// within `auth.refresh_s`: over HTTP (`/admin/tokens`, scope `tokens:admin`) and with `cloak
/// tokens`; nothing secret in any answer but the create's, nor in any log.
@Suite(
    .serialized,
    .enabled(if: PostgresTestCluster.isAvailable, "needs CLOAK_TEST_POSTGRES_URL (scripts/test starts a cluster)"),
    .tags(.postgres, .processes, .sockets))
struct APICredentialNodeTests {
    static let adminSecret = "admin-secret-for-tests"

    static func post(_ node: CloakNode, _ path: String, _ json: String, bearer: String) throws -> RawHTTPClient.Response
    {
        try node.client().request("POST", path, json: json, headers: [("Authorization", "Bearer \(bearer)")])
    }

    static func create(_ value: String, on node: CloakNode, bearer: String) -> Int {
        (try? post(node, "/aliases", #"{"data":[{"value":"\#(value)","format":"UUID"}]}"#, bearer: bearer).status) ?? 0
    }

    @Test func createUseListRevokeAcrossTwoNodes() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try PostgresTestCluster.freshDatabase()
        let fast = ["CLOAK_AUTH_REFRESH_S": "1"]
        let scopes = "tokens:admin, aliases:create, aliases:reveal"
        let a = try CloakNode(
            store: store, directory: directory.path, environment: fast, tokenID: "admin", scopes: scopes,
            secret: Self.adminSecret)
        defer { a.stop() }
        let b = try CloakNode(
            store: store, directory: directory.path, environment: fast, tokenID: "admin", scopes: scopes,
            secret: Self.adminSecret)
        defer { b.stop() }

        // Over HTTP on node a: a token with less than the admin holds.
        let made = try Self.post(
            a, "/admin/tokens", #"{"id":"app","scopes":["aliases:create"],"ttl_s":3600}"#, bearer: Self.adminSecret)
        #expect(made.status == 201, "\(made.text)")
        let secret = try #require(made.json?["token"] as? String)
        #expect(made.json?["id"] as? String == "app" && made.json?["expires_at"] is String)
        // This node honours it at once; the other within its refresh.
        #expect(Self.create("4111111111111111", on: a, bearer: secret) == 201)
        #expect(Poll.until { Self.create("4111111111111111", on: b, bearer: secret) == 201 })
        // It holds only its scope.
        let reveal = try b.client().request("GET", "/aliases/tok_x", headers: [("Authorization", "Bearer \(secret)")])
        #expect(reveal.status == 403)

        // tokens:admin cannot grant more than it holds, nor make a token that can.
        for body in [
            #"{"id":"wide","scopes":["aliases:delete"]}"#, #"{"id":"wide","scopes":["egress:*"]}"#,
            #"{"id":"wide","scopes":["aliases:create","aliases:lookup"]}"#,
        ] {
            let refused = try Self.post(a, "/admin/tokens", body, bearer: Self.adminSecret)
            #expect(refused.status == 403, "\(body): \(refused.text)")
        }
        let appAdmin = try Self.post(
            a, "/admin/tokens", #"{"id":"nested","scopes":["aliases:create"]}"#, bearer: secret)
        #expect(appAdmin.status == 403, "a token without tokens:admin")
        // Malformed, oversized and hostile bodies: a clear 400, nothing made.
        let manyScopes =
            #"{"id":"x","scopes":["# + String(repeating: #""aliases:create","#, count: 33).dropLast() + "]}"
        for body in [
            "[]", #"{"id":"x"}"#, #"{"scopes":["aliases:create"]}"#, #"{"id":"bad id","scopes":["aliases:create"]}"#,
            #"{"id":"x","scopes":"aliases:create"}"#, #"{"id":"x","scopes":[1]}"#, #"{"id":"x","scopes":[]}"#,
            #"{"id":"x","scopes":["aliases:create"],"ttl_s":59}"#,
            #"{"id":"x","scopes":["aliases:create"],"ttl_s":1e99}"#,
            #"{"id":"x","scopes":["aliases:create"],"requests_per_minute":0}"#,
            #"{"id":"x","scopes":["aliases:create"],"requests_per_minute":99999999999999999999}"#,
            #"{"id":"x","scopes":["aliases:create"],"admin":true}"#, #"{"id":"x","scopes":["nope:\u0000"]}"#,
            #"{"id":"\#(String(repeating: "a", count: 65))","scopes":["aliases:create"]}"#,
            manyScopes,
        ] {
            let refused = try Self.post(a, "/admin/tokens", body, bearer: Self.adminSecret)
            #expect(refused.status == 400, "\(body.prefix(60)): \(refused.status) \(refused.text)")
        }
        for id in ["x%00", "..%2F..", String(repeating: "a", count: 65)] {
            let r = try a.client().request(
                "DELETE", "/admin/tokens/\(id)", headers: [("Authorization", "Bearer \(Self.adminSecret)")])
            #expect(r.status == 404, "\(id.prefix(20)): \(r.status)")
        }
        // An id of the YAML's is refused.
        #expect(
            try Self.post(a, "/admin/tokens", #"{"id":"admin","scopes":["aliases:create"]}"#, bearer: Self.adminSecret)
                .status == 400)

        // cloak tokens, beside the nodes: create, list, revoke (its audit line on standard error,
        // the same pipe here: the create's answer is the line that holds the token).
        let cli = try a.command(["tokens", "create", "--id", "batch", "--scopes", "aliases:create", "--ttl", "90d"])
        #expect(cli.status == 0, "\(cli.output)")
        let answer = try #require(cli.output.split(separator: "\n").first { $0.contains(#""token":"#) })
        let cliSecret = try #require(
            (try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["token"] as? String)
        #expect(Poll.until { Self.create("5555555555554444", on: b, bearer: cliSecret) == 201 })

        let list = try a.client().request(
            "GET", "/admin/tokens", headers: [("Authorization", "Bearer \(Self.adminSecret)")])
        #expect(list.status == 200)
        let ids = ((list.json?["data"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
        #expect(Set(ids) == ["admin", "app", "batch"])
        let cliList = try a.command(["tokens", "list"])
        #expect(
            cliList.status == 0 && cliList.output.contains("\"batch\"")
                && cliList.output.contains("\"source\":\"yaml\""))
        // app was used on both nodes: the list says when (after the nodes handed it to the store).
        #expect(
            Poll.until {
                let r = try? a.client().request(
                    "GET", "/admin/tokens", headers: [("Authorization", "Bearer \(Self.adminSecret)")])
                return ((r?.json?["data"] as? [[String: Any]]) ?? []).contains {
                    $0["id"] as? String == "app" && $0["last_used_at"] is String
                }
            })

        // Revoke: over HTTP (app) and with the CLI (batch); both nodes refuse them within the refresh.
        let revoked = try a.client().request(
            "DELETE", "/admin/tokens/app", headers: [("Authorization", "Bearer \(Self.adminSecret)")])
        #expect(revoked.status == 204)
        #expect(Self.create("4111111111111111", on: a, bearer: secret) == 401)
        #expect(Poll.until { Self.create("4111111111111111", on: b, bearer: secret) == 401 })
        #expect(try a.command(["tokens", "revoke", "batch"]).status == 0)
        #expect(
            Poll.until {
                Self.create("5555555555554444", on: a, bearer: cliSecret) == 401
                    && Self.create("5555555555554444", on: b, bearer: cliSecret) == 401
            })
        // The YAML's token is revoked by editing the YAML, never here.
        let yamlRevoke = try a.client().request(
            "DELETE", "/admin/tokens/admin", headers: [("Authorization", "Bearer \(Self.adminSecret)")])
        #expect(yamlRevoke.status == 403)
        #expect(
            try a.client().request(
                "DELETE", "/admin/tokens/nobody", headers: [("Authorization", "Bearer \(Self.adminSecret)")]
            ).status == 404)

        // Nothing secret in any listing or log: the secrets, nor their digests.
        a.stop()
        b.stop()
        let everything = [a.log, b.log, list.text, cliList.output].joined(separator: "\n")
        for secret in [secret, cliSecret, Self.adminSecret] {
            #expect(!everything.contains(secret))
            let hex = Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(!everything.contains(hex))
        }
        // Create and revoke are audited, on the node that did them.
        #expect(a.log.contains(#""action":"tokens_create""#) && a.log.contains(#""action":"tokens_revoke""#))
    }
}
