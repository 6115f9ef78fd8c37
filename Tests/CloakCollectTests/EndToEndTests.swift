import CloakCollect
import CloakTesting
import Foundation
import Testing

/// Issue 35, end to end against the real server: an app loads the schema, types a card, matches
/// `/validate`, tokenizes (intent aliases), its backend keeps the card and mints a native
/// session, and the app reveals it; then every refusal.
@Suite(.serialized, .tags(.sockets)) struct EndToEndTests {
    static let card = "4111111111111111"

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// The checkout form filled as a user would, through the fields.
    static func fill(_ collect: CloakCollect) throws {
        try collect.field("card_data.card_number").replace(0..<0, with: card)
        try collect.field("card_data.card_cvc").replace(0..<0, with: "123")
        try collect.field("card_data.exp_date").replace(0..<0, with: "1230")
        try collect.field("card_data.card_holder").replace(0..<0, with: "Jane Doe")
        try collect.field("customer.ssn").replace(0..<0, with: "123456789")
    }

    /// A backend's session for `aliases`: `body` members beside them.
    static func session(_ server: TestServer, _ aliases: [String], _ extra: String = #","audience":"native""#)
        throws -> String
    {
        let list = aliases.map { "\"\($0)\"" }.joined(separator: ",")
        let r = try server.client().request(
            "POST", "/elements/sessions", json: #"{"aliases":[\#(list)]\#(extra)}"#,
            headers: bearer(TestServer.revealOnlyToken))
        guard let session = r.json?["session"] as? String else { throw CocoaError(.coderInvalidValue) }
        return session
    }

    /// The canonical alias of the card an app tokenized: `POST /aliases/keep` by a backend token.
    static func keep(_ server: TestServer, _ intent: String) throws -> String {
        let r = try server.client().request(
            "POST", "/aliases/keep", json: #"{"data":[{"alias":"\#(intent)"}]}"#,
            headers: bearer(TestServer.createOnlyToken))
        let data = r.json?["data"] as? [[String: Any]]
        guard let alias = (data?.first?["canonical"] as? [String: Any])?["alias"] as? String else {
            throw CocoaError(.coderValueNotFound)
        }
        return alias
    }

    @Test func anAppTokenizesItsBackendKeepsAndTheAppReveals() async throws {
        try await withTestServer(LiveServer.start()) { server in
            let url = LiveServer.url(server)
            let collect = CloakCollect(server: url, form: "checkout")
            try await collect.loadSchema()
            try Self.fill(collect)
            #expect(collect.state.isValid)
            let validated = try LiveServer.states(try await collect.submit(.validate))
            #expect(validated.isValid && validated.fields == collect.state.fields)

            let tokens = try await collect.submit(.tokens)
            #expect(tokens.status == 200, "\(tokens.status)")
            let answer = try #require(tokens.json as? [String: Any])
            let intent = try #require(answer["card_data.card_number"] as? String)
            #expect(intent.hasSuffix("1111") && intent != Self.card)
            #expect(answer["card_data.exp_year"] as? String == "2030")
            let canonical = try Self.keep(server, intent)

            let session = try Self.session(server, [canonical])
            let revealed = try await CloakReveal(server: url, session: session).reveal(alias: canonical)
            #expect(revealed.masked("•••• •••• •••• ####") == "•••• •••• •••• 1111")
            #expect(revealed.withValue { $0 } == Self.card)
            // The intent reveals too (a session may name any alias it was minted for).
            let intentSession = try Self.session(server, [intent])
            #expect(
                try await CloakReveal(server: url, session: intentSession).reveal(alias: intent).withValue { $0 }
                    == Self.card)
            let audits = server.logs.lines.filter { $0.contains(#""via":"native""#) }
            #expect(audits.count == 2 && audits.allSatisfy { $0.contains(#""result":"ok""#) })

            // A 422 is an answer, not an error: an empty form's tokens.
            collect.clearAll()
            let refused = try await collect.submit(.tokens)
            #expect(refused.status >= 400 && refused.errorCode == 1001)
            #expect(!server.logs.text.contains(Self.card) && !server.logs.text.contains("123456789"))
        }
    }

    @Test func everyRefusalHasItsCode() async throws {
        try await withTestServer(LiveServer.start()) { server in
            let url = LiveServer.url(server)
            let alias = try #require(
                try server.client().request(
                    "POST", "/aliases", json: #"{"data":[{"value":"\#(Self.card)","format":"FPE_SIX_T_FOUR"}]}"#,
                    headers: Self.bearer(TestServer.fullToken)
                ).json.flatMap { ($0["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]] }?.first?[
                    "alias"]
                    as? String)
            let other = "tok_sandbox_notinthesession"
            func refusal(_ session: String, _ asked: String = alias) async -> String? {
                do {
                    _ = try await CloakReveal(server: url, session: session).reveal(alias: asked)
                    return nil
                } catch let error as CloakCollectError {
                    #expect(!error.message.contains(Self.card) && !"\(error)".contains(Self.card))
                    return error.code
                } catch {
                    return "\(type(of: error))"
                }
            }
            #expect(await refusal(try Self.session(server, [alias]), other) == "not_in_session")
            #expect(
                await refusal(try Self.session(server, [alias], #","audience":"native","client":"203.0.113.7""#))
                    == "other_client")
            #expect(await refusal(try Self.session(server, [alias], "")) == "wrong_audience")  // a web session
            #expect(await refusal("cs1.e30.AAAA") == "invalid_session")
            // Expired: a one-second session, asked until it says so (never a fixed sleep).
            let short = try Self.session(server, [alias], #","audience":"native","ttl_s":1"#)
            var code = await refusal(short)
            let deadline = Date().addingTimeInterval(10)
            while code == nil && Date() < deadline {
                try await Task.sleep(nanoseconds: 50_000_000)
                code = await refusal(short)
            }
            #expect(code == "expired")
            // A native session on the web frame's path: refused there the same way.
            let native = try Self.session(server, [alias])
            let frame = try server.client().request(
                "GET", "/elements/v1/reveal",
                headers: [("Cloak-Session", native), ("Cloak-Alias", alias), ("Sec-Fetch-Site", "same-origin")])
            #expect(frame.status == 403 && frame.text.contains(#""reason":"wrong_audience""#))
            // A page's script (it sends Origin) gets nothing from the native path.
            let fromPage = try server.client().request(
                "POST", "/elements/v1/native/reveal", json: #"{"session":"\#(native)","alias":"\#(alias)"}"#,
                headers: [("Origin", "http://localhost:8000")])
            #expect(fromPage.status == 404 && !fromPage.text.contains(Self.card))
            // Hostile bodies: a clear 400, never a value.
            for bad in [
                "", "[]", "{}", #"{"session":1,"alias":"a"}"#, #"{"session":"s"}"#,
                #"{"session":"s","alias":"a","x":1}"#,
                #"{"session":"s","session":"t","alias":"a"}"#,
                #"{"session":"s","alias":"\#(String(repeating: "a", count: 300))"}"#,
            ] {
                let r = try server.client().request("POST", "/elements/v1/native/reveal", json: bad)
                #expect(r.status == 400 && r.errorCode == 1002, "\(bad.prefix(40)): \(r.text)")
            }
            let lines = server.logs.lines.filter { $0.contains(#""via":"native""#) }
            for reason in ["not_in_session", "other_client", "wrong_audience", "expired"] where reason != "expired" {
                #expect(lines.contains { $0.contains(#""result":"\#(reason)""#) }, "audit of \(reason)")
            }
        }
    }

    @Test func elementsNativeOffAnswersNotFound() async throws {
        // Pages only: the schema stays public (no secret in it), native sessions and reveals are off.
        let pages = try LiveServer.start(native: false)
        defer { pages.stop() }
        let minted = try pages.client().request(
            "POST", "/elements/sessions", json: #"{"aliases":["a"],"audience":"native"}"#,
            headers: Self.bearer(TestServer.revealOnlyToken))
        #expect(minted.status == 400 && minted.text.contains("elements.native"))
        let web = try Self.session(pages, ["a"], "")
        let error = await #expect(throws: CloakCollectError.self) {
            try await CloakReveal(server: LiveServer.url(pages), session: web).reveal(alias: "a")
        }
        #expect(error?.code == "not_found")
        // Neither pages nor apps: every Elements path is 404, the schema too.
        let none = try LiveServer.start(native: false, web: false)
        defer { none.stop() }
        let collect = CloakCollect(server: LiveServer.url(none), form: "checkout")
        let unavailable = await #expect(throws: CloakCollectError.self) { try await collect.loadSchema() }
        #expect(unavailable?.code == "schema_unavailable")
        // Apps only: the schema and native sessions, no web session.
        let apps = try LiveServer.start(native: true, web: false)
        defer { apps.stop() }
        let app = CloakCollect(server: LiveServer.url(apps), form: "checkout")
        try await app.loadSchema()
        let webSession = try apps.client().request(
            "POST", "/elements/sessions", json: #"{"aliases":["a"]}"#, headers: Self.bearer(TestServer.revealOnlyToken))
        #expect(webSession.status == 400 && webSession.text.contains("allowed_origins"))
        #expect(try apps.client().request("GET", "/elements/v1/cloak.js").status == 404)
    }

    @Test func anInsecureServerAndAnUnreachableOneAreErrorsNotHangs() async throws {
        let plain = CloakCollect(server: URL(string: "http://cloak.example")!, form: "checkout")
        let insecure = await #expect(throws: CloakCollectError.self) { try await plain.loadSchema() }
        #expect(insecure?.code == "insecure_server")
        // A port nothing listens on: no answer at all.
        let (fd, port) = LoopbackSocket.bound()
        defer { close(fd) }
        let gone = CloakCollect(server: URL(string: "http://127.0.0.1:\(port)")!, form: "checkout")
        let none = await #expect(throws: CloakCollectError.self) { try await gone.loadSchema() }
        #expect(none?.code == "no_answer")
        #expect(throws: CloakCollectError.self) { try gone.field("card_data.card_number") }
    }
}
