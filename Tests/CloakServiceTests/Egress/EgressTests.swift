import CloakCore
import CloakTesting
import Foundation
import Testing

/// Issue 8: egress. A backend sends aliases through Cloak to its payment provider (a real HTTPS
/// upstream here); Cloak reveals them on the wire, through the transform door and the forward
/// proxy, and redacts the answer.
@Suite(.serialized, .tags(.racy, .sockets)) struct EgressTests {
    @Test func theTransformDoorRevealsAliasesToTheUpstreamWithCurl() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let alias = try f.alias()
        #expect(alias != EgressFixture.card)
        let r = try EgressFixture.run(
            "curl",
            [
                "-sS", "-i", "http://127.0.0.1:\(f.server.port)/egress/psp/v1/charges?expand=card",
                "-H", "Proxy-Authorization: \(f.basicCredentials)", "-H", "Authorization: Bearer sk_test_psp_key",
                "--data-urlencode", "card[number]=\(alias)", "--data-urlencode", "amount=1000",
            ])
        #expect(r.status == 0 && r.out.hasPrefix("HTTP/1.1 200"), "\(r.out) \(r.err)")
        let seen = try #require(f.upstream.received.last)
        #expect(seen.method == "POST" && seen.path == "/v1/charges?expand=card")
        #expect(seen.body == "card[number]=\(EgressFixture.card)&amount=1000", "\(seen.body)")
        #expect(seen.header("Authorization") == "Bearer sk_test_psp_key")
        #expect(seen.header("Proxy-Authorization") == nil)
        // The answer echoes the card: the response operation aliases it again before the client sees it.
        #expect(!r.out.contains(EgressFixture.card))
        #expect(r.out.contains("card[number]=\(alias)"), "\(r.out)")
        #expect(!f.server.logs.text.contains(EgressFixture.card) && !f.server.logs.text.contains(alias))
        #expect(f.server.logs.text.contains(#""route":"psp""#) && f.server.logs.text.contains(#""revealed":1"#))
    }

    @Test func jsonAndHeaderSelectorsAreRevealedAndJSONAnswersRedacted() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/tokens", json: #"{"source":{"number":"\#(alias)","exp":"12/30"}}"#,
            headers: [("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"), ("X-Card-Number", alias)])
        #expect(r.status == 200, "\(r.text)")
        let seen = try #require(f.upstream.received.last)
        #expect(seen.body == #"{"source":{"number":"\#(EgressFixture.card)","exp":"12/30"}}"#)
        #expect(seen.header("X-Card-Number") == EgressFixture.card)
        #expect(r.text == #"{"source":{"number":"\#(alias)","exp":"12/30"}}"#, "\(r.text)")
    }

    @Test func credentialsScopesPathsAndMethodsAreDeniedByDefault() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let body = "card[number]=\(alias)"
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        func post(_ path: String, _ headers: [(String, String)], method: String = "POST") throws
            -> RawHTTPClient.Response
        {
            try f.server.client().request(method, path, body: Array(body.utf8), headers: form + headers)
        }
        let none = try post("/egress/psp/v1/charges", [])
        #expect(none.status == 407 && none.errorCode == 1300)
        #expect(none.header("Proxy-Authenticate") == #"Basic realm="cloak""#)
        let wrong = try post(
            "/egress/psp/v1/charges",
            [("Proxy-Authorization", "Basic " + Data("egress:nope".utf8).base64EncodedString())])
        #expect(wrong.status == 407 && wrong.errorCode == 1300)
        // A valid token whose id does not match the Basic user name.
        let mismatched = try post(
            "/egress/psp/v1/charges",
            [("Proxy-Authorization", "Basic " + Data("full:\(EgressFixture.egressToken)".utf8).base64EncodedString())])
        #expect(mismatched.status == 407)
        // The Cloak token in Authorization does not count: the door's credentials are Proxy-Authorization.
        let cloakToken = try post("/egress/psp/v1/charges", [("Authorization", "Bearer \(TestServer.fullToken)")])
        #expect(cloakToken.status == 407)
        let noScope = try post("/egress/psp/v1/charges", [("Proxy-Authorization", "Bearer \(TestServer.fullToken)")])
        #expect(noScope.status == 403 && noScope.errorCode == 1301)
        let unknownRoute = try post("/egress/other/v1/charges", [("Proxy-Authorization", f.basicCredentials)])
        #expect(unknownRoute.status == 403, "a token cannot probe route ids it may not use")
        let path = try post("/egress/psp/v2/charges", [("Proxy-Authorization", f.basicCredentials)])
        #expect(path.status == 403 && path.errorCode == 1301)
        let method = try post("/egress/psp/v1/charges", [("Proxy-Authorization", f.basicCredentials)], method: "PUT")
        #expect(method.status == 403 && method.errorCode == 1301)
        let dots = try post("/egress/psp/v1/../admin", [("Proxy-Authorization", f.basicCredentials)])
        #expect(dots.status == 400 || dots.status == 403)
        #expect(f.upstream.received.isEmpty)
    }

    /// The door's caller is Proxy-Authorization's, and the upstream's Authorization is never read
    /// as a Cloak token; other spellings of the door's path forward nothing. (`//egress/…` is an
    /// origin-form path with an empty first segment, RFC 9112 3.2.1: the door refuses it. evhttp
    /// read `egress` as an authority and answered 404.)
    @Test(arguments: [
        ("/egress/psp/v1/charges", 200), ("//egress/psp/v1/charges", 400), ("/egress//psp/v1/charges", 400),
    ])
    func theDoorTakesItsCallerFromProxyAuthorizationOnItsOwnPathOnly(_ path: String, _ status: Int) throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let body = Array("card[number]=\(alias)".utf8)
        let upstreamKey = [
            ("Authorization", "Bearer sk_test_psp_key"), ("Content-Type", "application/x-www-form-urlencoded"),
        ]
        let r = try f.server.client().request(
            "POST", path, body: body, headers: upstreamKey + [("Proxy-Authorization", f.basicCredentials)])
        #expect(r.status == status, "\(r.text)")
        #expect(f.upstream.received.last?.header("Authorization") == (status == 200 ? "Bearer sk_test_psp_key" : nil))
        let cloakTokenOnly = try f.server.client().request(
            "POST", path, body: body, headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
        #expect(
            cloakTokenOnly.status == (status == 404 ? 404 : 407),
            "a path the door answers asks for its credentials first")
        #expect(f.upstream.received.count == (status == 200 ? 1 : 0))
    }

    @Test(arguments: ["tok_sandbox_unknown", "4111111111111111", "", String(repeating: "9", count: 300)])
    func aSelectedValueThatIsNoLiveAliasIs422AndNothingIsForwarded(value: String) throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"source":{"number":"\#(value)"}}"#,
            headers: [("Proxy-Authorization", f.basicCredentials)])
        #expect(r.status == 422 && r.errorCode == 1422, "\(r.text)")
        #expect(r.text.contains("$.source.number"))
        if !value.isEmpty { #expect(!r.text.contains(value)) }
        #expect(f.upstream.received.isEmpty)
        #expect(value.isEmpty || !f.server.logs.text.contains(value))
    }

    @Test func aDeletedAliasIsNoLongerRevealed() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let alias = try f.alias("5555555555554444")
        let deleted = try f.server.client().request(
            "DELETE", "/aliases/\(alias)", body: [],
            headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
        #expect(deleted.status == 204 || deleted.status == 200, "\(deleted.text)")
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"source":{"number":"\#(alias)"}}"#,
            headers: [("Proxy-Authorization", f.basicCredentials)])
        #expect(r.status == 422 && r.errorCode == 1422)
        #expect(f.upstream.received.isEmpty)
    }

    @Test func moreAliasesThanTheRouteAllowsIs400() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let body = [String](repeating: "card[number]=\(alias)", count: 4).joined(separator: "&")
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", body: Array(body.utf8),
            headers: [
                ("Content-Type", "application/x-www-form-urlencoded"), ("Proxy-Authorization", f.basicCredentials),
            ])
        #expect(r.status == 400 && r.errorCode == 1002 && r.text.contains("max_aliases"), "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func mutualTLSIsPresentedWhenTheRouteHasAClientCertificate() throws {
        let withCert = try EgressServiceFixture(requireClientCertificate: true, clientCertificate: true)
        defer { withCert.stop() }
        let alias = try withCert.alias()
        let ok = try withCert.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"source":{"number":"\#(alias)"}}"#,
            headers: [("Proxy-Authorization", withCert.basicCredentials)])
        #expect(ok.status == 200, "\(ok.text)")
        #expect(withCert.upstream.received.last?.clientCertificate?.contains("cloak-egress") == true)

        let without = try EgressServiceFixture(requireClientCertificate: true, clientCertificate: false)
        defer { without.stop() }
        let alias2 = try without.alias()
        let refused = try without.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"source":{"number":"\#(alias2)"}}"#,
            headers: [("Proxy-Authorization", without.basicCredentials)])
        #expect(refused.status == 502 && refused.errorCode == 1400, "\(refused.text)")
        #expect(without.upstream.received.isEmpty)
    }

    // MARK: The forward-proxy door

    @Test func theForwardProxyRevealsInsideATunnelWithCurl() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let r = try EgressFixture.run(
            "curl",
            [
                "-sS", "-i", "-x", "http://127.0.0.1:\(f.egressPort)", "--proxy-user",
                "egress:\(EgressFixture.egressToken)",
                "--cacert", f.server.egressCAFile, "https://127.0.0.1:\(f.upstream.port)/v1/charges",
                "-H", "Authorization: Bearer sk_test_psp_key", "--data-urlencode", "card[number]=\(alias)",
            ])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("HTTP/1.1 200"), "\(r.out)")
        let seen = try #require(f.upstream.received.last)
        #expect(seen.body == "card[number]=\(EgressFixture.card)")
        #expect(seen.header("Authorization") == "Bearer sk_test_psp_key" && seen.header("Proxy-Authorization") == nil)
        #expect(!r.out.contains(EgressFixture.card) && r.out.contains(alias))
        #expect(!f.server.logs.text.contains(EgressFixture.card) && !f.server.logs.text.contains(alias))
    }

    @Test func theForwardProxyWorksWithPythonRequests() throws {
        let python = try #require(
            EgressFixture.pythonWithRequests, "python3-requests is installed by scripts/install-deps")
        let f = try EgressFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let script = """
            import requests, sys
            proxy = "http://egress:\(EgressFixture.egressToken)@127.0.0.1:\(f.egressPort)"
            r = requests.post("https://127.0.0.1:\(f.upstream.port)/v1/charges", data={"card[number]": "\(alias)", "amount": "5"},
                              headers={"Authorization": "Bearer sk_test_psp_key"}, proxies={"https": proxy},
                              verify="\(f.server.egressCAFile)", timeout=20)
            print(r.status_code)
            print(r.text)
            """
        let r = try EgressFixture.run(python, ["-c", script])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasPrefix("200"), "\(r.out) \(r.err)")
        #expect(!r.out.contains(EgressFixture.card) && r.out.contains(alias))
        #expect(f.upstream.received.last?.body == "card%5Bnumber%5D=\(EgressFixture.card)&amount=5")
    }

    /// A tunnel is granted to a token's secret, not its id alone: once the token is revoked and
    /// made again under its id (a leaked secret replaced), the tunnel opened with the old secret
    /// carries no more requests (407), with Python's requests keeping the tunnel open.
    @Test func aTunnelEndsWithTheSecretThatOpenedIt() throws {
        let python = try #require(
            EgressFixture.pythonWithRequests, "python3-requests is installed by scripts/install-deps")
        let f = try EgressFixture(scopes: "\"egress:psp\", \"tokens:admin\"")
        defer { f.stop() }
        let alias = try f.alias()
        let script = """
            import requests
            base = "http://127.0.0.1:\(f.server.port)"
            admin = {"Authorization": "Bearer \(EgressFixture.egressToken)"}
            def mint():
                r = requests.post(base + "/admin/tokens", headers=admin, json={"id": "pay2", "scopes": ["egress:psp"]})
                assert r.status_code == 201, r.text
                return r.json()["token"]
            secret = mint()
            session = requests.Session()
            proxy = "http://pay2:%s@127.0.0.1:\(f.egressPort)" % secret
            def pay():
                return session.post("https://127.0.0.1:\(f.upstream.port)/v1/charges", data={"card[number]": "\(alias)"},
                                    headers={"Authorization": "Bearer sk_test_psp_key"}, proxies={"https": proxy},
                                    verify="\(f.server.egressCAFile)", timeout=20).status_code
            print(pay())
            assert requests.delete(base + "/admin/tokens/pay2", headers=admin).status_code < 300
            mint()
            print(pay())
            """
        let r = try EgressFixture.run(python, ["-c", script])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.split(separator: "\n").map(String.init) == ["200", "407"], "\(r.out) \(r.err)")
        #expect(f.upstream.received.count == 1)
    }

    @Test func theForwardProxyRefusesHostsPathsAndCallersItDoesNotKnow() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let alias = try f.alias()
        func curl(_ url: String, user: String? = "egress:\(EgressFixture.egressToken)", method: String = "POST") throws
            -> (out: String, err: String, status: Int32)
        {
            var args = [
                "-sS", "-i", "-x", "http://127.0.0.1:\(f.egressPort)", "--cacert", f.server.egressCAFile, "-X", method,
                url, "--data-urlencode", "card[number]=\(alias)",
            ]
            if let user { args += ["--proxy-user", user] }
            return try EgressFixture.run("curl", args)
        }
        let noCredentials = try curl("https://127.0.0.1:\(f.upstream.port)/v1/charges", user: nil)
        #expect(noCredentials.out.contains("407"), "\(noCredentials.out) \(noCredentials.err)")
        let otherHost = try curl("https://127.0.0.1:1/v1/charges")
        #expect(otherHost.out.contains("403"), "\(otherHost.out) \(otherHost.err)")
        let otherPath = try curl("https://127.0.0.1:\(f.upstream.port)/v2/charges")
        #expect(otherPath.out.contains("HTTP/1.1 403"), "\(otherPath.out) \(otherPath.err)")
        let otherMethod = try curl("https://127.0.0.1:\(f.upstream.port)/v1/charges", method: "PUT")
        #expect(otherMethod.out.contains("HTTP/1.1 403"), "\(otherMethod.out)")
        let noScope = try curl("https://127.0.0.1:\(f.upstream.port)/v1/charges", user: "full:\(TestServer.fullToken)")
        #expect(noScope.out.contains("403"), "\(noScope.out)")
        #expect(f.upstream.received.isEmpty)
    }
}

/// What the attacker's review of the egress doors found, each as a test.
@Suite(.serialized, .tags(.sockets)) struct EgressHardeningTests {
    @Test func aRevealedValueThatWouldSplitAHeaderIsRefused() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        // Any text can be stored as a UUID alias; revealed into a header it would end the head.
        let alias = try f.alias("x\\r\\n \\r\\n\\r\\nPOST /v1/evil HTTP/1.1", format: "UUID")
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: "{}",
            headers: [("Proxy-Authorization", f.basicCredentials), ("X-Card-Number", alias)])
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    /// Malformed, hostile and oversized credentials: 407, nothing forwarded, never a crash.
    @Test(arguments: [
        "Basic", "Basic ", "Basic !!!not-base64!!!", "Basic " + Data("no-colon".utf8).base64EncodedString(),
        "Basic " + Data(":\(EgressFixture.egressToken)".utf8).base64EncodedString(),
        "Basic " + Data([0xFF, 0xFE, 0x3A, 0x00]).base64EncodedString(), "Bearer", "Bearer  ", "Digest username=egress",
        "Bearer " + String(repeating: "A", count: 8000), "basic\t" + Data("egress:x".utf8).base64EncodedString(),
    ])
    func malformedProxyCredentialsAre407(header: String) throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: "{}", headers: [("Proxy-Authorization", header)])
        #expect(r.status == 407 && r.errorCode == 1300, "\(r.status) \(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    /// CONNECT targets that are not host:port: refused before any tunnel, the server unharmed.
    @Test(arguments: ["127.0.0.1", ":443", "127.0.0.1:0", "127.0.0.1:99999", "[::1", "user@127.0.0.1:443", "/path"])
    func malformedConnectTargetsOpenNoTunnel(target: String) throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let client = try RawHTTPClient(port: f.egressPort)
        try client.send("CONNECT \(target) HTTP/1.1\r\nHost: x\r\nProxy-Authorization: \(f.basicCredentials)\r\n\r\n")
        let r = try? client.readResponse()
        #expect(r.map { $0.status >= 400 } ?? true, "\(r?.status ?? 0)")
        #expect(RawHTTPClient.waitUntil(port: f.egressPort, path: "/", answers: 400), "the door still answers")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func absoluteFormHTTPSIsRefusedOnTheForwardDoor() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let client = try RawHTTPClient(port: f.egressPort)
        try client.send(
            "POST https://127.0.0.1:\(f.upstream.port)/v1/charges HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: \(f.basicCredentials)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        let r = try client.readResponse()
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func aFailedHandshakeInsideATunnelClosesTheConnection() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let client = try RawHTTPClient(port: f.egressPort)
        try client.send(
            "CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\r\nHost: 127.0.0.1:\(f.upstream.port)\r\nProxy-Authorization: \(f.basicCredentials)\r\n\r\n"
        )
        let r = try client.readResponse(hasBody: false)
        #expect(r.status == 200)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")  // not TLS
        #expect(client.waitForClose(timeout: 5), "the connection must close at once, not at the header deadline")
    }

    /// A client that sends its next request before the CONNECT's answer would have it read as
    /// plain HTTP (a smuggling attempt, or an early ClientHello): no tunnel, nothing forwarded.
    @Test func bytesSentBeforeTheConnectIsAnsweredOpenNoTunnel() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let client = try RawHTTPClient(port: f.egressPort)
        try client.send(
            "CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Proxy-Authorization: \(f.basicCredentials)\r\n\r\n"
                + "POST /v1/charges HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
        let r = try client.readResponse()
        #expect(r.status == 400, "\(r.status) \(r.text)")
        #expect(f.upstream.received.isEmpty)
        #expect(RawHTTPClient.waitUntil(port: f.egressPort, path: "/", answers: 400), "the door still answers")
    }

    /// A CONNECT inside an open tunnel (over its TLS) is refused: a tunnel never leads to another.
    @Test func aConnectInsideATunnelIsRefused() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let script = """
            import socket, ssl, sys
            s = socket.create_connection(("127.0.0.1", \(f.egressPort)), timeout=10)
            s.sendall(b"CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                      b"Proxy-Authorization: \(f.basicCredentials)\\r\\n\\r\\n")
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += s.recv(1)
            print(head.split(b" ")[1].decode())
            context = ssl.create_default_context(cafile="\(f.server.egressCAFile)")
            t = context.wrap_socket(s, server_hostname="127.0.0.1")
            t.sendall(b"CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                      b"Proxy-Authorization: \(f.basicCredentials)\\r\\n\\r\\n")
            print(t.recv(4096).split(b" ")[1].decode())
            """
        let r = try EgressFixture.run("python3", ["-c", script])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.split(separator: "\n").map(String.init) == ["200", "400"], "\(r.out) \(r.err)")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func aConnectWithoutCredentialsIs407AndTheConnectionMayRetry() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let client = try RawHTTPClient(port: f.egressPort)
        try client.send("CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let first = try client.readResponse()
        #expect(first.status == 407 && first.header("Proxy-Authenticate") == #"Basic realm="cloak""#)
        try client.send(
            "CONNECT 127.0.0.1:\(f.upstream.port) HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: \(f.basicCredentials)\r\n\r\n"
        )
        let second = try client.readResponse(hasBody: false)
        #expect(second.status == 200)
        #expect(f.server.logs.text.contains(#""msg":"egress tunnel""#) || f.server.logs.text.contains("egress tunnel"))
        #expect(!f.server.logs.text.contains(EgressFixture.egressToken))
    }

    @Test func revealingIntoTheAnswerNeedsAliasesReveal() throws {
        let f = try EgressServiceFixture(
            extraRoutes: """
                    - id: echo
                      upstream: "https://127.0.0.1:PORT"
                      response:
                        - {reveal: {json: ["$.card"]}}
                      ca_file: "CA"
                      allow_private: true
                """, scopes: "\"egress:*\"")
        defer { f.stop() }
        let alias = try f.alias()
        let r = try f.server.client().request(
            "POST", "/egress/echo/v1/x", json: #"{"card":"\#(alias)"}"#,
            headers: [("Proxy-Authorization", f.basicCredentials)])
        #expect(r.status == 403 && r.errorCode == 1301, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }
}
