import CloakTesting
import CloakVault
import Foundation
import Testing

/// Issue 59, item 1, as an operator meets it: a real `cloak serve` on a SQLite file keeps every
/// audited action as an event, `GET /admin/audit` finds it, and `cloak audit verify` checks the
/// chains against the heads the node logged, and names the event someone forged.
@Suite(.tags(.processes, .sockets)) struct AuditEndToEndTests {
    static let bearer = [("Authorization", "Bearer \(CloakNode.token)")]

    @Test func eventsAreSearchedAndTheChainsVerifyAgainstTheLoggedHeads() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = "\(directory.path)/cloak.db"
        let node = try CloakNode(
            store: "sqlite:\(database)", directory: directory.path,
            scopes: "aliases:create, aliases:reveal, aliases:delete, audit:read")
        defer { node.stop() }
        let client = try node.client()
        let created = try client.request(
            "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}"#,
            headers: Self.bearer)
        #expect(created.status == 201, "\(created.text)")
        let alias = try #require(VaultAPITests.aliases(created).first?["alias"] as? String)
        #expect(try client.request("GET", "/aliases/\(alias)", headers: Self.bearer).status == 200)
        #expect(try client.request("DELETE", "/aliases/\(alias)", headers: Self.bearer).status == 204)
        #expect(try client.request("GET", "/aliases/\(alias)", headers: Self.bearer).status == 404)
        // Two refused credentials from this address: one counted event, written at stop.
        for _ in 0..<2 {
            #expect(
                try client.request("GET", "/aliases/\(alias)", headers: [("Authorization", "Bearer nope")]).status
                    == 401)
        }

        // Newest first; each event names the alias by its keyed reference only.
        let all = try client.request("GET", "/admin/audit", headers: Self.bearer)
        #expect(all.status == 200, "\(all.text)")
        #expect(all.header("Cache-Control")?.contains("no-store") == true)
        let events = try #require(all.json?["data"] as? [[String: Any]])
        #expect(events.map { $0["action"] as? String } == ["reveal", "delete", "reveal", "create"])
        #expect(events.map { $0["result"] as? String } == ["not_found", "ok", "ok", "ok"])
        let reference = try #require(events.last?["alias_ref"] as? String)
        #expect(reference.hasPrefix("ar_") && events.allSatisfy { $0["alias_ref"] as? String == reference })
        #expect(!all.text.contains(alias) && !all.text.contains("4111111111111111"))
        #expect(events.allSatisfy { $0["token_id"] as? String == "nodes" })

        // Filters, and pages that follow `next`.
        let reveals = try client.request("GET", "/admin/audit?action=reveal&result=ok", headers: Self.bearer)
        #expect((reveals.json?["data"] as? [[String: Any]])?.count == 1)
        var seen: [String] = []
        var path = "/admin/audit?limit=1&alias_ref=\(reference)"
        while true {
            let page = try client.request("GET", path, headers: Self.bearer)
            #expect(page.status == 200, "\(page.text)")
            seen += ((page.json?["data"] as? [[String: Any]]) ?? []).compactMap { $0["action"] as? String }
            guard let next = page.json?["next"] as? String else { break }
            path = "/admin/audit?limit=1&alias_ref=\(reference)&cursor=\(next)"
        }
        #expect(seen == ["reveal", "delete", "reveal", "create"])
        let old = try client.request("GET", "/admin/audit?until=2000-01-01T00:00:00Z", headers: Self.bearer)
        #expect((old.json?["data"] as? [[String: Any]])?.isEmpty == true)

        // Times at the end of what is taken: answered, not a crash (a node once trapped on an
        // overflow past Int64 here).
        let latest = try client.request("GET", "/admin/audit?until=253402300799999&limit=1", headers: Self.bearer)
        #expect(latest.status == 200, "\(latest.text)")
        func cursor(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        #expect(
            try node.client().request(
                "GET", "/admin/audit?cursor=\(cursor("253402300800000.1.c"))", headers: Self.bearer
            )
            .status == 200)

        // Hostile and mistaken queries: a clear 400, never a wider search.
        for query in [
            "until=9223372036854775807", "from=9223372036854775806", "until=253402300800000",
            "until=10000-01-01T00:00:00Z", "cursor=\(cursor("9223372036854775807.1.c"))", "cursor=\(cursor("-5.1.c"))",
            "acton=reveal", "action=reveal&action=create", "limit=0", "limit=501", "from=yesterday",
            "cursor=%%%", "cursor=bm90IG1pbmU", "alias_ref=tok_123", "action=",
            "from=2030-01-01T00:00:00Z&until=2020-01-01T00:00:00Z",
            "token=" + String(repeating: "x", count: 300),
        ] {
            // A connection each: a refusal may close it.
            let refused = try node.client().request("GET", "/admin/audit?\(query)", headers: Self.bearer)
            #expect(refused.status == 400 && refused.errorCode == 1002, "\(query): \(refused.text)")
        }

        node.stop()
        // A create is in the store only; the other actions are audit lines too.
        #expect(!node.log.contains(#""action":"create""#))
        #expect(node.log.contains(#""action":"delete""#) && node.log.contains(#""action":"reveal""#))
        let store = try SQLiteAliasStore(path: database)
        let refusals = try store.auditEvents(AuditQuery(action: "auth_refused")).events
        #expect(refusals.count == 1 && refusals.first?.draft.fact("count") == "2")
        #expect(refusals.first?.draft.client == "127.0.0.1")
        // The node logged each chain's head at stop: verify finds them all.
        #expect(node.log.contains(#""msg":"audit head""#))
        let verified = try node.command(["audit", "verify", "--heads", node.output])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.hasPrefix("ok: "), "\(verified.output)")

        // Someone who can write the database, without the key: an event of their own is named.
        let chain = try #require(store.auditChains().first)
        let last = try #require(store.auditChain(chain, after: 0, limit: 1000).last?.block)
        let next = try #require(last.summary).last + 1
        let body = AuditBlockBody.encode([
            AuditEvent.Draft(at: 1, action: .create, tokenID: "nodes", client: "-", result: .ok)
        ])
        let forged = AuditBlock(
            chain: last.chain, first: next, body: body, previousMAC: last.mac, mac: [UInt8](repeating: 1, count: 32))
        try store.begin()
        try store.appendAuditBlocks([forged])
        try store.commit()
        let broken = try node.command(["audit", "verify"])
        #expect(broken.status == 1)
        #expect(broken.output.contains("event \(next)"), "\(broken.output)")
    }
}
