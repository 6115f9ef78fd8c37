import CloakCore
import CloakCrypto
import CloakService
import CloakTesting
import CloakVault
import Foundation
import Testing

@testable import CloakService

/// Issue 44, items 2 and 7, with the built `cloak` beside a `cloak serve` on one SQLite vault:
/// `cloak tokens create` and `revoke` write their audit line (JSON, as nodes log) to standard
/// error, the node logs the change when it adopts it, and `cloak tokens sign` is how an operator
/// makes a document from before documents were signed work again.
@Suite(.serialized, .tags(.processes, .sockets)) struct TokenCommandTests {
    static func lines(_ output: String) -> [String] { output.split(separator: "\n").map(String.init) }

    /// The secret `cloak tokens create` printed (its one line with `"token"`).
    static func secret(_ output: String) -> String? {
        lines(output).lazy.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["token"] as? String
        }.first
    }

    static func create(_ card: String, on node: CloakNode, bearer: String) -> Int {
        let body = #"{"data":[{"value":"\#(card)","format":"UUID"}]}"#
        return
            (try? node.client().request(
                "POST", "/aliases", json: body, headers: [("Authorization", "Bearer \(bearer)")]
            ).status) ?? 0
    }

    @Test func theCommandsAuditOnStandardErrorAndTheNodeAuditsWhatItAdopts() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            environment: ["CLOAK_AUTH_REFRESH_S": "1"])
        defer { node.stop() }

        let created = try node.command(["tokens", "create", "--id", "batch", "--scopes", "aliases:create"])
        #expect(created.status == 0, "\(created.output)")
        let audit = try #require(
            Self.lines(created.output).first { $0.contains(#""msg":"audit""#) }, "\(created.output)")
        for member in [#""action":"tokens_create""#, #""subject":"batch""#, #""token_id":"cli:"#, #""result":"ok""#] {
            #expect(audit.contains(member), "\(audit)")
        }
        let answer = try #require(Self.lines(created.output).first { $0.contains(#""token":"#) })
        let secret = try #require(
            (try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["token"] as? String)
        #expect(!audit.contains(secret) && !audit.contains(Hex.string(Digest.sha256(Array(secret.utf8)))))

        // The node adopts it within auth.refresh_s, says so (a change it did not make), and honours it.
        #expect(Poll.until { node.log.contains(#""added":"batch""#) })
        let adoption = Self.lines(node.log).first { $0.contains(#""added":"batch""#) }
        #expect(adoption?.contains(#""origin":"store""#) == true && adoption?.contains(#""msg":"audit""#) == true)
        #expect(Poll.until { Self.create("4111111111111111", on: node, bearer: secret) == 201 })

        let listed = try node.command(["tokens", "list"])
        #expect(listed.status == 0 && listed.output.contains(#""state":"active","minted_by":null"#), "\(listed.output)")

        let revoked = try node.command(["tokens", "revoke", "batch"])
        #expect(revoked.status == 0, "\(revoked.output)")
        #expect(revoked.output.contains(#""action":"tokens_revoke""#) && revoked.output.contains(#""subject":"batch""#))
        #expect(Poll.until { node.log.contains(#""removed":"batch""#) })
        #expect(Poll.until { Self.create("4111111111111111", on: node, bearer: secret) == 401 })

        // A refused change is audited too, and changes nothing.
        let refused = try node.command(["tokens", "revoke", "nobody"])
        #expect(refused.status == 2 && refused.output.contains(#""result":"refused""#), "\(refused.output)")
        node.stop()
        #expect(!node.log.contains(secret))
    }

    @Test func anOperatorSignsADocumentFromBeforeAfterReviewingIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = "sqlite:\(directory.path)/cloak.db"
        let node = try CloakNode(store: store, directory: directory.path, environment: ["CLOAK_AUTH_REFRESH_S": "1"])
        defer { node.stop() }
        let legacySecret = "legacy-secret-from-before"
        let legacy =
            #"{"version":1,"tokens":[{"id":"legacy","sha256":""#
            + Hex.string(Digest.sha256(Array(legacySecret.utf8)))
            + #"","scopes":["aliases:create"],"created_at":1},"#
            // One that breaks the two-person rule: signing it would not make nodes honour it.
            + #"{"id":"both-duties","sha256":""# + Hex.string(Digest.sha256(Array("both".utf8)))
            + #"","scopes":["aliases:reveal","jobs:export","jobs:approve"],"person":"eve","created_at":1}]}"#
        try SQLiteAliasStore(path: "\(directory.path)/cloak.db").setMetadata(
            APICredentials.storeName, Array(legacy.utf8))
        #expect(Poll.until { node.log.contains(#""reason":"unsigned""#) })
        #expect(Self.create("4111111111111111", on: node, bearer: legacySecret) == 401)

        // The list shows it, and says no node honours it; a change is refused meanwhile.
        let listed = try node.command(["tokens", "list"])
        #expect(listed.status == 0 && listed.output.contains(#""id":"legacy""#))
        #expect(listed.output.contains("no node honours") && listed.output.contains("cloak tokens sign"))
        let blocked = try node.command(["tokens", "create", "--id", "new", "--scopes", "aliases:create"])
        #expect(blocked.status == 2 && blocked.output.contains("cloak tokens sign"), "\(blocked.output)")

        // Without --yes it only says what it would sign.
        let asked = try node.command(["tokens", "sign"])
        #expect(asked.status == 1 && asked.output.contains("legacy"), "\(asked.output)")
        #expect(asked.output.contains("token both-duties will not be honoured even once signed"), "\(asked.output)")
        let signed = try node.command(["tokens", "sign", "--yes"])
        #expect(signed.status == 0 && signed.output.contains(#""action":"tokens_sign""#), "\(signed.output)")
        #expect(signed.output.contains(#""signed":"legacy,both-duties""#), "\(signed.output)")
        #expect(Poll.until { Self.create("4111111111111111", on: node, bearer: legacySecret) == 201 })
        #expect(try node.command(["tokens", "sign", "--yes"]).output.contains("nothing to sign"))
    }
}

/// Issue 57 item 9: a token made elsewhere works on a node at once: an unknown bearer token
/// makes the node read the store's credentials once (at most once a second) before it refuses.
@Suite(.serialized, .tags(.racy, .processes)) struct UnknownTokenRefreshTests {
    @Test func aTokenMadeElsewhereWorksAtOnceAndAMadeUpOneIsStill401() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // The timer would take an hour: only the unknown token's own reading can find it.
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path,
            environment: ["CLOAK_AUTH_REFRESH_S": "3600"])
        defer { node.stop() }
        let created = try node.command(["tokens", "create", "--id", "fresh", "--scopes", "aliases:create"])
        #expect(created.status == 0, "\(created.output)")
        let secret = try #require(TokenCommandTests.secret(created.output), "\(created.output)")
        #expect(TokenCommandTests.create("4111111111111111", on: node, bearer: secret) == 201)
        #expect(TokenCommandTests.create("4111111111111111", on: node, bearer: "ck_made_up_token_0123456789") == 401)
        #expect(TokenCommandTests.create("4111111111111111", on: node, bearer: "ck_another_made_up_token") == 401)
    }
}
