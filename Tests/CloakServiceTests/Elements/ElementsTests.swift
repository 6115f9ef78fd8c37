import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Issue 23: Cloak Elements' server side: files, schemas, reveal sessions (docs/elements.md).
/// The browser side is tested in headless Chromium by Tests/Browser/elements_test.py.
@Suite(.serialized, .tags(.sockets, .browser)) struct ElementsTests {
    static let page = "http://localhost:8000"

    @Test func everyElementsPathIs404UntilAnOriginIsAllowed() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: #"allowed_origins: ["http://localhost:8000"]"#, with: "allowed_origins: []")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            for path in [
                "/elements/v1/cloak.js", "/elements/v1/field.html", "/elements/v1/forms/checkout",
                "/elements/v1/reveal",
            ] {
                let r = try server.client().request("GET", path)
                #expect(r.status == 404 && r.errorCode == 1404, "\(path): \(r.status)")
            }
            let session = try server.client().request(
                "POST", "/elements/sessions", json: #"{"aliases":["a"]}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            #expect(session.status == 404)
        }
    }

    @Test func scriptsAreCachedAndOpenToAnyPageAndFramesCarryTheCSP() throws {
        try withTestServer(TestService()) { server throws in
            let js = try server.client().request("GET", "/elements/v1/cloak.js")
            #expect(js.status == 200 && js.body == ElementsAssets.loader)
            #expect(js.header("Content-Type") == "text/javascript; charset=utf-8")
            // Exactly `public` (issue 34, defect 7: a public → package rewrite once hit this literal).
            #expect(
                js.header("Access-Control-Allow-Origin") == "*" && js.header("Cache-Control") == "public, max-age=300")
            let etag = try #require(js.header("ETag"))
            let again = try server.client().request("GET", "/elements/v1/cloak.js", headers: [("If-None-Match", etag)])
            #expect(again.status == 304 && again.body.isEmpty && again.header("ETag") == etag)
            let stale = try server.client().request(
                "GET", "/elements/v1/cloak.js", headers: [("If-None-Match", "\"0\"")])
            #expect(stale.status == 200)

            for document in ["field.html", "controller.html", "reveal.html"] {
                let r = try server.client().request("GET", "/elements/v1/\(document)")
                #expect(r.status == 200 && r.header("Content-Type") == "text/html; charset=utf-8", "\(document)")
                let csp = try #require(r.header("Content-Security-Policy"))
                let directives = Set(csp.components(separatedBy: "; "))
                #expect(
                    directives.isSuperset(of: [
                        "default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors \(Self.page)",
                        "base-uri 'none'", "form-action 'none'",
                    ]), "\(csp)")
                #expect(r.header("Access-Control-Allow-Origin") == nil)
                // No inline script or style: the CSP would refuse it, so none may ship.
                #expect(!r.text.contains("<script>") && !r.text.contains("style="), "\(document)")
                #expect(
                    r.text.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil,
                    "\(document): inline handler")
            }
            for missing in ["/elements/v1/nope.js", "/elements/v1/..%2Fconfig", "/elements/v2/cloak.js"] {
                #expect(try server.client().request("GET", missing).status == 404, "\(missing)")
            }
        }
    }

    /// With Elements on, an upstream's answer (which Cloak did not write) cannot run as a
    /// document of Cloak's origin next to the frames.
    @Test func upstreamAnswersAreSandboxedDocuments() throws {
        let yaml = """
            elements: {allowed_origins: ["https://shop.example"]}
            routes:
              - {id: 00000000-0000-4000-8000-00000000000c, path: /plain, upstream: echo}
            """
        let html = "<html><script>parent.frames[0].document</script></html>"
        for (yaml, on) in [(yaml, true), (yaml.replacingOccurrences(of: "https://shop.example", with: ""), false)] {
            try withTestServer(TestService(yaml: yaml.replacingOccurrences(of: "[\"\"]", with: "[]"))) {
                server throws in
                let echoed = try server.client().request("POST", "/proxy/plain", json: html)
                #expect(echoed.status == 200 && echoed.text.contains("<script>"), "\(echoed.text)")
                let csp = echoed.header("Content-Security-Policy")
                #expect(on ? csp == "sandbox; default-src 'none'; frame-ancestors 'none'" : csp == nil)
                #expect(!on || echoed.header("X-Content-Type-Options") == "nosniff")
                // Cloak's own JSON answers go without: they cost nothing extra on the hot path.
                #expect(try server.client().request("GET", "/healthz").header("Content-Security-Policy") == nil)
            }
        }
    }

    @Test func theIntegrityValueIsTheServedLoaders() throws {
        let digest = Digest.sha384(ElementsAssets.loader)
        #expect(ElementsAssets.loaderIntegrity == "sha384-" + Data(digest).base64EncodedString())
        #expect(ElementsAssets.loader.count < 30 * 1024, "the loader's budget is 30 KB")
    }

    @Test func theSchemaCarriesTheFormAndTheOrigins() throws {
        try withTestServer(TestService(today: CalendarDate(year: 2026, month: 11, day: 23))) { server throws in
            let r = try server.client().request("GET", "/elements/v1/forms/checkout")
            #expect(r.status == 200 && r.header("Cache-Control") == "no-cache")
            let json = try #require(r.json)
            #expect(json["form"] as? String == "checkout")
            #expect(json["allowedOrigins"] as? [String] == [Self.page] && json["fontOrigins"] as? [String] == [])
            #expect((json["today"] as? [String: Int]) == ["year": 2026, "month": 11, "day": 23])
            let fields = try #require(json["fields"] as? [[String: Any]])
            #expect(
                fields.map { $0["name"] as? String } == [
                    "card_data.card_number", "card_data.card_cvc", "card_data.exp_date", "card_data.card_holder",
                    "billing.phone",
                    "customer.ssn",
                ])
            // Every card number, CVC and SSN of the shipped checkout form is tokenized: the frames may
            // ask for aliases and the redacted echo. No route of the shipped configuration uses it.
            #expect(
                (json["targets"] as? [String: [String]]) == ["kinds": ["tokens", "send", "validate"], "routes": []])
            let etag = try #require(r.header("ETag"))
            #expect(
                try server.client().request("GET", "/elements/v1/forms/checkout", headers: [("If-None-Match", etag)])
                    .status
                    == 304)
            let unknown = try server.client().request("GET", "/elements/v1/forms/nope%22%3Cscript%3E")
            // The name comes back scrubbed in a JSON body, never as a document a browser would render.
            #expect(unknown.status == 404 && unknown.header("Content-Type")?.hasPrefix("application/json") == true)
        }
    }

    // MARK: reveal sessions

    static func tokenize(_ server: TestService, _ card: String) throws -> String {
        let r = try server.client().request(
            "POST", "/aliases", json: IntentTests.body(card), headers: IntentTests.bearer(TestServer.fullToken))
        return try #require(IntentTests.alias(r), "\(r.text)")
    }

    static func session(_ server: TestService, _ aliases: [String], ttl: Int = 60) throws -> RawHTTPClient.Response {
        let list = aliases.map { "\"\($0)\"" }.joined(separator: ",")
        return try server.client().request(
            "POST", "/elements/sessions", json: #"{"aliases":[\#(list)],"ttl_s":\#(ttl)}"#,
            headers: IntentTests.bearer(TestServer.revealOnlyToken))
    }

    static func reveal(_ server: TestService, session: String, alias: String, site: String? = "same-origin") throws
        -> RawHTTPClient.Response
    {
        var headers = [("Cloak-Session", session), ("Cloak-Alias", alias)]
        if let site { headers.append(("Sec-Fetch-Site", site)) }
        return try server.client().request("GET", "/elements/v1/reveal", headers: headers)
    }

    @Test func aSessionRevealsItsAliasesToCloaksOwnFrameOnly() throws {
        try withTestServer(TestService()) { server throws in
            let card = "4111111111111111"
            let alias = try Self.tokenize(server, card)
            let other = try Self.tokenize(server, "5555555555554444")
            let minted = try Self.session(server, [alias])
            #expect(minted.status == 201, "\(minted.text)")
            let session = try #require(minted.json?["session"] as? String)
            #expect(minted.json?["expires_at"] is String && !session.contains(card))

            let shown = try Self.reveal(server, session: session, alias: alias)
            #expect(shown.status == 200 && shown.json?["value"] as? String == card)
            #expect(shown.header("Cache-Control") == "no-store")
            // Not from Cloak's own frame: a page's script (cross-site), a top-level visit, curl.
            for site in ["cross-site", "same-site", "none", nil] {
                let r = try Self.reveal(server, session: session, alias: alias, site: site)
                #expect(r.status == 403 && !r.text.contains(card), "\(site ?? "no header")")
            }
            // Another alias, a forged or altered session, garbage.
            let notNamed = try Self.reveal(server, session: session, alias: other)
            #expect(
                notNamed.status == 403 && notNamed.text.contains(#""reason":"not_in_session""#)
                    && !notNamed.text.contains(other))
            var tampered = Array(session.utf8)
            tampered[8] = tampered[8] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(
                try Self.reveal(server, session: String(decoding: tampered, as: UTF8.self), alias: alias).status == 403)
            let forged = try Self.reveal(server, session: "cs1.e30.AAAA", alias: alias)
            #expect(forged.status == 403 && forged.text.contains(#""reason":"invalid_session""#))
            #expect(try Self.reveal(server, session: String(repeating: "x", count: 9000), alias: alias).status != 200)

            // Audited with the id of the token that minted the session, never the alias or the value.
            let lines = server.logs.lines.filter { $0.contains(#""via":"elements""#) }
            #expect(lines.contains { $0.contains(#""token_id":"revealer""#) && $0.contains(#""result":"ok""#) })
            #expect(lines.contains { $0.contains(#""result":"not_in_session""#) })
            #expect(!server.logs.text.contains(alias) && !server.logs.text.contains(card))
        }
    }

    /// Where a form would hand a raw value back to the page, its frames may only validate.
    @Test func aFormThatAnswersRawValuesMayOnlyValidateFromTheFrames() throws {
        let yaml = """
            elements: {allowed_origins: ["https://shop.example"]}
            forms:
              raw: {fields: [{name: n, type: cardNumber}, {name: s, type: ssn, tokenization: {format: UUID, storage: PERSISTENT}}]}
              safe: {fields: [{name: n, type: cardNumber, tokenization: {format: FPE_T_FOUR, storage: PERSISTENT}}, {name: h, type: cardHolderName}]}
              cvc: {card_brands: {accepted: [amex]}, fields: [{name: c, type: cvc, tokenization: {format: GENERIC_T_FOUR, storage: VOLATILE}}]}
            routes:
              - {id: 00000000-0000-4000-8000-00000000000a, path: /pay/, form: safe, upstream: echo}
              - {id: 00000000-0000-4000-8000-00000000000b, path: /raw, form: raw, upstream: echo}
              - {id: 00000000-0000-4000-8000-00000000000c, path: /plain, upstream: echo}
            """
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let raw =
                try server.client().request("GET", "/elements/v1/forms/raw").json?["targets"] as? [String: [String]]
            #expect(raw == ["kinds": ["validate"], "routes": []])
            let safe =
                try server.client().request("GET", "/elements/v1/forms/safe").json?["targets"] as? [String: [String]]
            #expect(safe == ["kinds": ["tokens", "send", "validate"], "routes": ["/pay"]])
            // A last-four alias of a CVC is the CVC.
            let cvc =
                try server.client().request("GET", "/elements/v1/forms/cvc").json?["targets"] as? [String: [String]]
            #expect(cvc == ["kinds": ["validate"], "routes": []])
        }
    }

    @Test func aSessionBoundToAClientRevealsToThatAddressOnly() throws {
        try withTestServer(TestService()) { server throws in
            let alias = try Self.tokenize(server, "4111111111111111")
            func mint(_ client: String) throws -> RawHTTPClient.Response {
                try server.client().request(
                    "POST", "/elements/sessions", json: #"{"aliases":["\#(alias)"],"client":"\#(client)"}"#,
                    headers: IntentTests.bearer(TestServer.revealOnlyToken))
            }
            let here = try #require(try mint("127.0.0.1").json?["session"] as? String)
            #expect(try Self.reveal(server, session: here, alias: alias).status == 200)
            let elsewhere = try #require(try mint("203.0.113.7").json?["session"] as? String)
            let refused = try Self.reveal(server, session: elsewhere, alias: alias)
            #expect(refused.status == 403 && refused.text.contains(#""reason":"other_client""#))
            #expect(try mint("not an address").status == 400)
        }
    }

    @Test func sessionsNeedARevealTokenAndAreBounded() throws {
        try withTestServer(TestService()) { server throws in
            let body = #"{"aliases":["tok_sandbox_x"],"ttl_s":60}"#
            #expect(try server.client().request("POST", "/elements/sessions", json: body).status == 401)
            #expect(
                try server.client().request(
                    "POST", "/elements/sessions", json: body,
                    headers: IntentTests.bearer(TestServer.createOnlyToken)
                ).status == 403)
            let twentyOne = (0..<21).map { "\"tok_sandbox_\($0)\"" }.joined(separator: ",")
            for bad in [
                #"{"aliases":["a"],"ttl_s":601}"#, #"{"aliases":["a"],"ttl_s":0}"#, #"{"aliases":["a"],"ttl_s":1.5}"#,
                #"{"aliases":[]}"#, #"{"aliases":[\#(twentyOne)]}"#, #"{"aliases":[1]}"#, #"{"aliases":["a\u0000"]}"#,
                #"{"aliases":["a"],"x":1}"#, "{}", "[]", "not json",
                #"{"aliases":["a"],"audience":"app"}"#, #"{"aliases":["a"],"audience":1}"#,
                #"{"aliases":["a"],"audience":"native"}"#,  // elements.native is off here
            ] {
                let r = try server.client().request(
                    "POST", "/elements/sessions", json: bad, headers: IntentTests.bearer(TestServer.fullToken))
                #expect(r.status == 400 && r.errorCode == 1002, "\(bad): \(r.text)")
            }
        }
    }

    @Test func anExpiredSessionRevealsNothing() throws {
        let key = HMACKey(SymmetricKey.random())
        let session = RevealSession(tokenID: "t", aliases: ["a", "b"], expiresAt: 1000)
        let sealed = session.sealed(with: key)
        #expect(try RevealSession.open(sealed, key: key, now: 999) == session)
        #expect(throws: RevealSession.Problem.expired) { try RevealSession.open(sealed, key: key, now: 1000) }
        #expect(throws: RevealSession.Problem.badSignature) {
            try RevealSession.open(sealed, key: HMACKey(SymmetricKey.random()), now: 0)
        }
        for bad in ["", "cs1.", "cs1..", "cs2." + sealed.dropFirst(4), sealed + ".x", "cs1.!!.AA"] {
            #expect(throws: RevealSession.Problem.self) { try RevealSession.open(bad, key: key, now: 0) }
        }
    }

    // MARK: configuration

    @Test(
        arguments: [
            ("https://shop.example", nil), ("http://localhost:8000", nil), ("http://[::1]:8080", nil),
            ("https://a.b.example:8443", nil),
            ("*", "expected an origin"), ("https://*.example", "lower-case"), ("https://shop.example/", "lower-case"),
            ("https://Shop.example", "lower-case"), ("https://shop.example:443", "default port"),
            ("http://shop.example:80", "default port"),
            ("ftp://shop.example", "expected an origin"), ("https://", "no host"), ("https://shop.example:0", "port"),
            ("https://shop.example:99999", "port"), ("https://u@shop.example", "lower-case"),
            ("https://.example", "host"),
            ("https://shop.example?x", "lower-case"), ("'self'", "expected an origin"), ("https://a b", "lower-case"),
        ] as [(String, String?)])
    func originsAreExactlyAsBrowsersWriteThem(_ origin: String, _ problem: String?) {
        let found = ElementsSettings.originProblem(origin)
        if let problem {
            #expect(found?.contains(problem) == true, "\(origin): \(found ?? "accepted")")
        } else {
            #expect(found == nil, "\(origin): \(found ?? "")")
        }
    }

    @Test func checkConfigNamesABadOriginByItsPath() throws {
        let yaml =
            "elements: {allowed_origins: [\"https://ok.example\", \"https://bad.example/path\"], font_origins: [\"*\"]}\n"
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml)
            Issue.record("accepted")
        } catch {
            let text = "\(error)"
            #expect(
                text.contains("elements.allowed_origins[1]") && text.contains("elements.font_origins[0]"), "\(text)")
            #expect(!text.contains("elements.allowed_origins[0]"))
        }
        let fine = try ServiceConfiguration.parse(yaml: "elements: {allowed_origins: [\"https://ok.example\"]}\n")
        #expect(fine.elements == ElementsSettings(allowedOrigins: ["https://ok.example"]))
        #expect(try ServiceConfiguration.parse(yaml: "server: {}\n").elements.isEnabled == false)
    }
}
