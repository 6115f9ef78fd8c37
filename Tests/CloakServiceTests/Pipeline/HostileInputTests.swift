import CloakHTTP
import CloakTesting
import Foundation
import Testing

/// The security review's defects over the wire, against the real server: each test sends what an
/// attacker with network access (and no token, unless said) would send.
@Suite(.serialized, .tags(.racy, .sockets)) struct HostileInputTests {
    static let bearer = VaultAPITests.bearer
    static func routeYAML(_ upstream: Int) -> String {
        TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - {id: "7d3c1c9e-0a55-4a4b-9b8e-2f0c6a1d3e11", path: /raw, upstream: "http://127.0.0.1:\(upstream)/raw",
                     methods: [GET, POST, PATCH, DELETE, PUT]}

                """)
    }

    // MARK: Defect 1

    @Test func anonymousTokenizeAnswersTheSameForStoredAndNewValues() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let stored = try client.request(
                "POST", "/aliases",
                json: #"""
                    {"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","classifiers":["team"]},
                             {"value":"4111111111111111","format":"UUID"}]}
                    """#, headers: Self.bearer(TestServer.createOnlyToken))
            #expect(stored.status == 201)
            func ask(_ pan: String) throws -> [String: Any] {
                let r = try client.request("POST", "/tokens", json: #"{"data":[{"value":"\#(pan)","format":"UUID"}]}"#)
                #expect(r.status == 201)
                return try #require((r.json?["data"] as? [[String: Any]])?.first)
            }
            let old = try ask("4111111111111111"), new = try ask("5555555555554444")
            #expect(Set(old.keys) == Set(new.keys))
            #expect((old["aliases"] as? [Any])?.count == 1 && (new["aliases"] as? [Any])?.count == 1)
            #expect(old["classifiers"] as? [String] == [] && new["classifiers"] as? [String] == [])
            let now = ISO8601DateFormatter().string(from: Date()).prefix(13)  // same hour
            #expect((old["created_at"] as? String)?.hasPrefix(now) == true)
        }
    }

    // MARK: Defects 2 and 3: what reaches an upstream

    @Test(arguments: ["GET", "PATCH", "DELETE"])
    func everyForwardedBodyCarriesItsExactLength(method: String) throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.routeYAML(upstream.port))) { server throws in
            let smuggled = "GET /admin HTTP/1.1\r\nHost: internal\r\n\r\n"
            let r = try server.client().request(method, "/proxy/raw", body: Array(smuggled.utf8))
            #expect(r.status == 204)
            let seen = upstream.text
            #expect(seen.contains("Content-Length: \(smuggled.utf8.count)\r\n"), "\(seen)")
            // The smuggled text is the body of the one request, never a request of its own.
            #expect(seen.components(separatedBy: "HTTP/1.1\r\n").count == 3)
        }
    }

    @Test func queriesCannotEndTheRequestLineOrAddHeaders() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: Self.routeYAML(upstream.port))) { server throws in
            let client = try server.client()
            try client.send("GET /proxy/raw?a=1 HTTP/1.1\rX-Injected: 1&b=\"<>\u{7f} HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try client.readResponse()
            let seen = upstream.text
            #expect(!seen.contains("\rX-Injected") && !seen.contains("\nX-Injected"), "\(seen)")
            if r.status == 204 {
                let line = seen.components(separatedBy: "\r\n").first ?? ""
                #expect(line.split(separator: " ").count == 3, "\(line)")
                #expect(line.hasPrefix("GET /raw?a=1%20HTTP/1.1%0DX-Injected:%201"), "\(line)")
            } else {
                #expect(r.status == 400)
            }
        }
    }

    @Test func expectAndNonTokenHeaderNamesNeverReachTheUpstream() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: Self.routeYAML(upstream.port))) { server throws in
            let client = try server.client()
            let r = try client.request(
                "POST", "/proxy/raw", body: Array("ab".utf8), headers: [("Expect", "100-continue")])
            #expect(r.status == 204)
            #expect(!upstream.text.lowercased().contains("expect:"))
            let refused = try server.client()
            try refused.send(
                "POST /proxy/raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\nab")
            let answer = try refused.readResponse()
            #expect(answer.status == 400 && answer.errorCode == 1002)
            #expect(!upstream.text.lowercased().contains("transfer-encoding"))
        }
    }

    @Test(arguments: [
        "/proxy/raw/..;/admin", "/proxy/raw/..%5Cadmin", "/proxy/raw/%252e%252e/admin", "/proxy/raw/.;x/a",
        // `//evil.example/x` as a target is an authority to a server resolving it against a base URL.
        "/proxy/raw//evil.example/x",
    ])
    func pathsThatUpstreamsNormaliseIntoDotSegmentsAreRefused(path: String) throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: Self.routeYAML(upstream.port))) { server throws in
            let r = try server.client().request("GET", path)
            #expect(r.status == 400 && r.errorCode == 1002, "\(path): \(r.status)")
            #expect(upstream.text.isEmpty)
        }
    }

    @Test func aCloakTokenNeverGoesUpstreamEvenWhereAuthorizationIsForwarded() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let yaml = Self.routeYAML(upstream.port).replacingOccurrences(
            of: "methods: [GET, POST, PATCH, DELETE, PUT]}",
            with: "methods: [GET, POST, PATCH, DELETE, PUT], forward_authorization: true}")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let client = try server.client()
            #expect(
                try client.request("GET", "/proxy/raw", headers: [("Authorization", "Bearer upstream-secret")]).status
                    == 204)
            #expect(upstream.text.contains("Authorization: Bearer upstream-secret"))
            #expect(try client.request("GET", "/proxy/raw", headers: Self.bearer(TestServer.fullToken)).status == 204)
            #expect(!upstream.text.contains(TestServer.fullToken))
            // Nor in the other forms a client might send it: Basic with the token as the password
            // (any user name) or as the whole credential, or bare.
            for credential in [
                "Basic " + Data("payer:\(TestServer.fullToken)".utf8).base64EncodedString(),
                "Basic " + Data(TestServer.fullToken.utf8).base64EncodedString(), TestServer.fullToken,
            ] {
                let r = try client.request("GET", "/proxy/raw", headers: [("Authorization", credential)])
                #expect(r.status == 204 || r.status == 401, "\(r.status)")
                #expect(!upstream.text.contains(credential))
            }
        }
    }

    // MARK: Defect 9: aliases with separators

    @Test func aliasesWithSlashesAndCommasCanBeRevealedUpdatedAndDeleted() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let created = try client.request(
                "POST", "/aliases",
                json: #"""
                    {"data":[{"value":"ab,cd/ef12","format":"ALPHANUMERIC_LENGTH_PRESERVING"}]}
                    """#, headers: Self.bearer(TestServer.createOnlyToken))
            let alias = try #require(VaultAPITests.aliases(created).first?["alias"] as? String)
            #expect(alias.contains(",") && alias.contains("/"))
            let encoded = alias.replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: ",", with: "%2C")
            let many = try client.request("GET", "/aliases?q=\(encoded)", headers: Self.bearer(TestServer.fullToken))
            #expect(
                ((many.json?["data"] as? [String: Any])?[alias] as? [String: Any])?["value"] as? String == "ab,cd/ef12")
            #expect(
                try client.request(
                    "PUT", "/aliases/\(encoded)", json: #"{"data":{"classifiers":["x"]}}"#,
                    headers: Self.bearer(TestServer.fullToken)
                ).status == 204)
            #expect(
                try client.request("GET", "/aliases/\(encoded)", headers: Self.bearer(TestServer.fullToken)).status
                    == 200)
            #expect(
                try client.request("DELETE", "/aliases/\(encoded)", headers: Self.bearer(TestServer.fullToken)).status
                    == 204)
            #expect(
                try client.request("GET", "/aliases/\(encoded)", headers: Self.bearer(TestServer.fullToken)).status
                    == 404)
        }
    }

    @Test func aNulInAnAliasIsNotFound() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let created = try client.request(
                "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111"}]}"#,
                headers: Self.bearer(TestServer.createOnlyToken))
            let alias = try #require(VaultAPITests.aliases(created).first?["alias"] as? String)
            #expect(
                try client.request("GET", "/aliases/\(alias)%00junk", headers: Self.bearer(TestServer.fullToken)).status
                    == 404)
            #expect(
                try client.request("GET", "/aliases?q=\(alias)%00junk", headers: Self.bearer(TestServer.fullToken))
                    .status
                    == 404)
        }
    }

    // MARK: Defect 12: logs

    @Test func cardNumbersInPathsAndRequestIDsNeverReachTheLog() throws {
        try withTestServer(TestServer()) { server throws in
            let client = try server.client()
            _ = try client.request(
                "GET", "/x/4111%C2%A01111%C2%A01111%C2%A01111", headers: [("X-Request-Id", "4111111111111111")])
            _ = try client.request("GET", "/aliases/4111-1111-1111-1111", headers: Self.bearer(TestServer.fullToken))
            let log = server.logs.text
            for leak in ["4111\u{00A0}1111", "4111111111111111", "4111-1111-1111"] {
                #expect(!log.contains(leak), "\(leak)")
            }
        }
    }

    // MARK: Defect 18 over HTTP

    @Test func anonymousCallersCannotFillASmallAliasSpace() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/tokens",
                json: #"""
                    {"data":[{"value":"378282246310005","format":"FPE_SIX_T_FOUR","storage":"VOLATILE"}]}
                    """#)
            #expect(r.status == 400 && r.errorCode == 1002)
            #expect(r.text.contains("data[0]") && !r.text.contains("378282246310005"))
        }
    }

    // MARK: Rate limits and open_tokenize

    static let strict = TestServer.configurationWithTokens
        .replacingOccurrences(
            of: "anonymous: {requests_per_minute: 10000000, burst: 1000000}",
            with: "anonymous: {requests_per_minute: 60, burst: 3}")

    @Test func anonymousCallersPastTheirRateGet429WithRetryAfter() throws {
        try withTestServer(TestService(yaml: Self.strict)) { server throws in
            let client = try server.client()
            var statuses: [Int] = []
            var limited: RawHTTPClient.Response?
            for _ in 0..<6 {
                let r = try client.request("POST", "/forms/checkout/validate", json: #"{"fields":{}}"#)
                statuses.append(r.status)
                if r.status == 429 { limited = r }
            }
            #expect(statuses.prefix(3).allSatisfy { $0 == 200 }, "\(statuses)")
            let answer = try #require(limited)
            #expect(answer.errorCode == 1429)
            #expect(Int(answer.header("Retry-After") ?? "") ?? 0 >= 1)
            // Health probes are never limited; a token has its own budget.
            #expect(try client.request("GET", "/healthz").status == 200)
            #expect(
                try client.request(
                    "POST", "/forms/checkout/validate", json: #"{"fields":{}}"#,
                    headers: Self.bearer(TestServer.fullToken)
                ).status == 200)
            let metrics = try client.request("GET", "/metrics", headers: Self.bearer(TestServer.fullToken)).text
            #expect(metrics.contains(#"cloak_rate_limited_total{kind="anonymous"}"#))
        }
    }

    @Test func aTokensOwnRateOverridesTheDefault() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "scopes: [aliases:create]}", with: "scopes: [aliases:create], requests_per_minute: 2}")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let client = try server.client()
            let statuses = try (0..<4).map { _ in
                try client.request("GET", "/metrics", headers: Self.bearer(TestServer.createOnlyToken)).status
            }
            #expect(statuses == [200, 200, 429, 429], "\(statuses)")
        }
    }

    @Test func withOpenTokenizeOffEveryStoringEndpointNeedsAToken() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "open_tokenize: true", with: "open_tokenize: false")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let client = try server.client()
            let form =
                #"{"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123","card_data.exp_date":"12/30","card_data.card_holder":"Jane Doe","customer.ssn":"123-45-6789"}}"#
            for path in ["/forms/checkout/tokens", "/forms/checkout/send"] {
                #expect(try client.request("POST", path, json: form).status == 401)
                #expect(
                    try client.request("POST", path, json: form, headers: Self.bearer(TestServer.revealOnlyToken))
                        .status
                        == 403)
                #expect(
                    try client.request("POST", path, json: form, headers: Self.bearer(TestServer.createOnlyToken))
                        .status
                        == 200)
            }
            #expect(try client.request("POST", "/tokens", json: #"{"data":[{"value":"x"}]}"#).status == 401)
            #expect(try client.request("POST", "/forms/checkout/validate", json: form).status == 200)
        }
    }
}

/// Defect 15: values never print, whatever Swift prints them with.
@Suite struct RedactedDescriptionTests {
    @Test func requestsAndSubmissionsPrintRedacted() throws {
        let pan = "4111111111111111"
        let request = HTTPRequest(
            method: .POST, path: "/tokens", headers: [("Authorization", "Bearer secret-token")],
            body: Array(#"{"fields":{"card_data.card_number":"\#(pan)"}}"#.utf8))
        var dumped = ""
        dump(request, to: &dumped)
        for text in ["\(request)", String(reflecting: request), dumped] {
            #expect(!text.contains(pan) && !text.contains("secret-token"), "\(text)")
        }
    }
}
