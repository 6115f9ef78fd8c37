import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// Review defects 2 to 5 and 8 (the attacker's review of the egress doors, the Vault API and
/// the rate limiter): each test fails on the code before the fix.
@Suite(.serialized, .tags(.sockets)) struct ReviewDefectTests {
    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }
    static let payToken = "pay-only-token"
    static let deleteToken = "delete-only-token"

    /// The test configuration with a token that may only pay (`egress:psp`) and one that may only
    /// delete, and `replacements` applied to the YAML.
    static func server(_ replacements: [(String, String)] = []) throws -> TestService {
        func entry(_ id: String, _ token: String, _ scopes: String) -> String {
            let hex = Digest.sha256(Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
            return "{id: \(id), sha256: \"\(hex)\", scopes: [\(scopes)]}, "
        }
        var yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [",
            with: "  tokens: [" + entry("payer", payToken, "\"egress:psp\"")
                + entry("deleter", deleteToken, "aliases:delete"))
        for (from, to) in replacements {
            #expect(yaml.contains(from), "the configuration has no \(from)")
            yaml = yaml.replacingOccurrences(of: from, with: to)
        }
        return try TestService(yaml: yaml)
    }

    static func aliases(_ r: RawHTTPClient.Response) -> [String] {
        ((r.json?["data"] as? [[String: Any]]) ?? []).compactMap {
            (($0["aliases"] as? [[String: Any]])?.first?["alias"] as? String)
        }
    }

    /// Luhn-valid 16-digit cards sharing BIN 411111 and last four 1111 (the middle varies).
    static func cards(_ count: Int, from start: Int = 0) -> [String] {
        var out: [String] = []
        var middle = start
        while out.count < count {
            let digits = "411111" + String(format: "%05d", middle) + "1111"
            middle += 1
            // One check digit at position 11 (0-based) makes the whole number Luhn-valid.
            for d in 0...9 {
                let candidate = digits.prefix(11) + String(d) + "1111"
                if Self.luhn(String(candidate)) { out.append(String(candidate)); break }
            }
        }
        return out
    }

    static func luhn(_ s: String) -> Bool {
        let digits = s.compactMap { $0.wholeNumberValue }
        var sum = 0
        for (i, d) in digits.reversed().enumerated() { sum += i % 2 == 1 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d }
        return sum % 10 == 0
    }

    static func body(_ values: [String], format: String = "FPE_SIX_T_FOUR") -> String {
        #"{"data":["# + values.map { #"{"value":"\#($0)","format":"\#(format)"}"# }.joined(separator: ",") + "]}"
    }

    // MARK: 2. Any token on an open endpoint

    @Test(arguments: [payToken, deleteToken])
    func aTokenWithoutAliasesCreateIsAnonymousOnOpenEndpoints(token: String) throws {
        try withTestServer(Self.server()) { server throws in
            let client = try server.client()
            let card = "4111111111111111"
            let first = Self.aliases(
                try client.request("POST", "/tokens", json: Self.body([card]), headers: Self.bearer(token)))
            let second = Self.aliases(
                try client.request("POST", "/tokens", json: Self.body([card]), headers: Self.bearer(token)))
            #expect(first.count == 1 && second.count == 1)
            #expect(first != second, "a token without aliases:create got a repeatable alias")
            // A creator gets the one deterministic alias, which neither random draw is.
            let creator = Self.aliases(
                try client.request(
                    "POST", "/aliases", json: Self.body([card]),
                    headers: Self.bearer(TestServer.createOnlyToken)))
            #expect(creator.count == 1 && !first.contains(creator[0]) && !second.contains(creator[0]))
            // The small alias space an anonymous caller may not fill: a 15-digit Amex.
            let amex = try client.request(
                "POST", "/tokens", json: Self.body(["378282246310005"]), headers: Self.bearer(token))
            #expect(amex.status == 400 && amex.errorCode == 1002, "\(amex.text)")
        }
    }

    @Test func aTokenWithoutAliasesCreateTakesFromItsAddresssAnonymousBucket() throws {
        try withTestServer(
            Self.server([
                (
                    "anonymous: {requests_per_minute: 10000000, burst: 1000000}",
                    "anonymous: {requests_per_minute: 1, burst: 2}"
                )
            ])
        ) { server in
            let client = try server.client()
            let statuses = try (0..<3).map { _ in
                try client.request(
                    "POST", "/tokens", json: Self.body(["4111111111111111"], format: "UUID"),
                    headers: Self.bearer(Self.payToken)
                ).status
            }
            #expect(statuses == [201, 201, 429])
            // The same address without a token shares that bucket; a creator has its own.
            #expect(
                try client.request("POST", "/tokens", json: Self.body(["4111111111111111"], format: "UUID")).status
                    == 429)
            #expect(
                try client.request(
                    "POST", "/tokens", json: Self.body(["4111111111111111"], format: "UUID"),
                    headers: Self.bearer(TestServer.createOnlyToken)
                ).status == 201)
        }
    }

    // MARK: 3. A creator guessing a card from its alias

    @Test func aCreatorIsHeldToDistinctValuesPerBucketAndAudited() throws {
        try withTestServer(Self.server([("  bucket_values_per_hour: 30 ", "  bucket_values_per_hour: 5 ")])) {
            server throws in
            let client = try server.client()
            let creator = Self.bearer(TestServer.createOnlyToken)
            let cards = Self.cards(7)
            // Six distinct values of one bucket in one request: refused whole, nothing written.
            let over = try client.request("POST", "/aliases", json: Self.body(Array(cards.prefix(6))), headers: creator)
            #expect(over.status == 429 && over.errorCode == 1429, "\(over.text)")
            #expect(Int(over.header("Retry-After") ?? "") ?? 0 >= 1)
            #expect(!over.text.contains("411111"))
            // Five pass, and the same five again (values already counted count once).
            for _ in 0..<2 {
                #expect(
                    try client.request("POST", "/aliases", json: Self.body(Array(cards.prefix(5))), headers: creator)
                        .status
                        == 201)
            }
            // A sixth distinct value of that bucket is refused; one of another bucket is not.
            #expect(try client.request("POST", "/aliases", json: Self.body([cards[6]]), headers: creator).status == 429)
            #expect(
                try client.request("POST", "/aliases", json: Self.body(["5555555555554444"]), headers: creator).status
                    == 201)
            // Another token has its own count.
            #expect(
                try client.request(
                    "POST", "/aliases", json: Self.body([cards[6]]),
                    headers: Self.bearer(TestServer.fullToken)
                ).status == 201)
            // The alert: an audit line naming the token and the format, and a metric.
            let audit = server.logs.lines.filter { $0.contains(#""action":"bucket_limit""#) }
            #expect(
                audit.count == 2
                    && audit.allSatisfy { $0.contains(#""token_id":"creator""#) && $0.contains("FPE_SIX_T_FOUR") })
            #expect(!server.logs.text.contains("411111"))
            let metrics = try client.request("GET", "/metrics").text
            #expect(metrics.contains(#"cloak_bucket_value_limit_total{format="FPE_SIX_T_FOUR"} 2"#), "\(metrics)")
        }
    }

    @Test func tokenFormatsAreHeldToTheBucketLimitToo() throws {
        // An SSN under GENERIC_T_FOUR shows its last four: 10^5 candidates share them.
        try withTestServer(Self.server([("  bucket_values_per_hour: 30 ", "  bucket_values_per_hour: 5 ")])) {
            server throws in
            let ssns = (0..<6).map { String(format: "%03d-%02d-6789", 100 + $0, 10 + $0) }
            let r = try server.client().request(
                "POST", "/aliases", json: Self.body(ssns, format: "GENERIC_T_FOUR"),
                headers: Self.bearer(TestServer.createOnlyToken))
            #expect(r.status == 429 && r.errorCode == 1429, "\(r.text)")
            #expect(
                try server.client().request(
                    "POST", "/aliases", json: Self.body(Array(ssns.prefix(5)), format: "GENERIC_T_FOUR"),
                    headers: Self.bearer(TestServer.createOnlyToken)
                ).status == 201)
        }
    }

    @Test func aCreatorsRateBucketIsChargedPerValue() throws {
        try withTestServer(
            Self.server([
                (
                    "token: {requests_per_minute: 10000000, burst: 1000000}",
                    "token: {requests_per_minute: 1, burst: 10}"
                )
            ])
        ) { server in
            let client = try server.client()
            let values = (0..<10).map { "value-\($0)" }
            #expect(
                try client.request(
                    "POST", "/aliases", json: Self.body(values, format: "UUID"),
                    headers: Self.bearer(TestServer.createOnlyToken)
                ).status == 201)
            // Ten values spent the burst of ten: the next request waits, whatever its size.
            let next = try client.request(
                "POST", "/aliases", json: Self.body(["one"], format: "UUID"),
                headers: Self.bearer(TestServer.createOnlyToken))
            #expect(next.status == 429 && next.errorCode == 1429, "\(next.text)")
        }
    }

    // MARK: 4. A Cloak token in Authorization on the egress doors

    @Test func aCloakTokenInAuthorizationIsNeverForwardedByTheTransformDoor() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"),
                ("Authorization", "Bearer \(TestServer.fullToken)"),
            ])
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
        #expect(!r.text.contains(TestServer.fullToken))
        // The provider's own key still goes through.
        let ok = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"), ("Authorization", "Bearer sk_test_psp"),
            ])
        #expect(ok.status == 200)
        #expect(f.upstream.received.last?.header("Authorization") == "Bearer sk_test_psp")
    }

    @Test(arguments: [
        "Basic " + Data("backend:\(TestServer.fullToken)".utf8).base64EncodedString(),
        "Bearer \(TestServer.fullToken)", TestServer.fullToken,
    ])
    func everyAuthorizationHeaderAndSchemeIsChecked(value: String) throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"), ("Authorization", "Bearer sk_test_psp"),
                ("Authorization", value),
            ])
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func aCloakTokenInAuthorizationIsNeverForwardedThroughATunnel() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let r = try EgressFixture.run(
            "curl",
            [
                "-sS", "--proxy", "http://127.0.0.1:\(f.egressPort)", "--proxy-user",
                "egress:\(EgressFixture.egressToken)",
                "--cacert", f.server.egressCAFile, "https://127.0.0.1:\(f.upstream.port)/v1/charges",
                "-H", "Authorization: Bearer \(TestServer.fullToken)", "-d", "amount=1",
            ])
        #expect(r.out.contains("1002"), "\(r.out) \(r.err)")
        #expect(f.upstream.received.isEmpty)
    }

    /// The review of the fix: a forward-door connection refused by the per-address limit kept
    /// its filter (and socket) alive for good; it is closed now.
    @Test func aForwardDoorConnectionOverThePerAddressLimitIsClosedAndFreed() throws {
        let yaml =
            TestServer.configurationWithTokens + """

                egress:
                  listen: "127.0.0.1:0"
                  routes:
                    - {id: psp, upstream: "https://127.0.0.1:9", allow_private: true}

                """
        try withTestServer(TestServer(yaml: yaml, environment: ["CLOAK_SERVER_MAX_CONNECTIONS_PER_ADDRESS": "1"])) {
            server throws in
            let port = try #require(server.egress?.port)
            // Counted and known to be adopted (answered, and kept open: a 407 to a CONNECT may be retried).
            let held = try RawHTTPClient(port: port)
            try held.send("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
            #expect(try held.readResponse().status == 407)
            func descriptors() -> Int {
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
            }
            let before = descriptors()
            for _ in 0..<20 {
                let refused = try RawHTTPClient(port: port, timeout: 5)
                let answer = try refused.readResponse()
                #expect(answer.status == 503, "\(answer.status) \(answer.text)")
                #expect(refused.waitForClose(timeout: 5), "a refused connection stayed open")
            }
            // Every refused socket is closed on the server's side too (polled: closes are a loop turn late).
            var settled = false
            for _ in 0..<100 where !settled {
                settled = descriptors() <= before + 2
                if !settled { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(settled, "descriptors grew from \(before) to \(descriptors())")
            _ = held
        }
    }

    // MARK: 5. PUT /aliases/{alias}

    @Test func updatingNeedsAliasesUpdateAndTellsNothingWithoutIt() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let created = try client.request(
                "POST", "/aliases", json: Self.body(["4111111111111111"], format: "UUID"),
                headers: Self.bearer(TestServer.createOnlyToken))
            let alias = try #require(Self.aliases(created).first)
            let body = #"{"data":{"classifiers":["x"]}}"#
            // A creator: 403 for an alias that exists and for one that does not alike.
            let known = try client.request(
                "PUT", "/aliases/\(alias)", json: body, headers: Self.bearer(TestServer.createOnlyToken))
            let unknown = try client.request(
                "PUT", "/aliases/tok_sandbox_nope", json: body, headers: Self.bearer(TestServer.createOnlyToken))
            #expect(known.status == 403 && known.errorCode == 1301)
            #expect(known.text == unknown.text)
            // With aliases:update: 204 or one 404 for whatever is not found, each audited.
            let full = Self.bearer(TestServer.fullToken)
            #expect(try client.request("PUT", "/aliases/\(alias)", json: body, headers: full).status == 204)
            let missing = try client.request("PUT", "/aliases/tok_sandbox_nope", json: body, headers: full)
            let malformed = try client.request("PUT", "/aliases/%00", json: body, headers: full)
            #expect(missing.status == 404 && malformed.status == 404)
            #expect(
                missing.json?["error"] as? NSDictionary == malformed.json?["error"] as? NSDictionary,
                "\(missing.text) \(malformed.text)")
            let audit = server.logs.lines.filter { $0.contains(#""action":"update""#) }
            #expect(audit.count == 3)
            #expect(
                audit.contains { $0.contains(#""result":"ok""#) }
                    && audit.filter { $0.contains(#""result":"not_found""#) }.count == 2)
        }
    }

    @Test func aliasesUpdateIsAKnownScope() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "aliases:delete]", with: "aliases:update]")
        _ = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
    }

    // MARK: 8. One refusal text on the forward door

    @Test func theForwardDoorAnswersOneTextForUnknownHostsAndUnfitRoutes() throws {
        let f = try EgressFixture(
            extraRoutes: """
                    - id: plain
                      upstream: "http://127.0.0.1:9"
                      paths: ["/v1/*"]
                      allow_private: true
                """, scopes: "\"egress:psp\", \"egress:plain\"")
        defer { f.stop() }
        func absolute(_ url: String) throws -> RawHTTPClient.Response {
            let c = try RawHTTPClient(port: f.egressPort)
            return try c.request(
                "POST", url, body: Array("a=1".utf8), headers: [("Proxy-Authorization", f.basicCredentials)])
        }
        let noHost = try absolute("http://127.0.0.1:1/v1/charges")
        let noRoute = try absolute("http://127.0.0.1:9/other")
        #expect(noHost.status == 403 && noRoute.status == 403)
        #expect(
            noHost.json?["error"] as? NSDictionary == noRoute.json?["error"] as? NSDictionary,
            "\(noHost.text) \(noRoute.text)")
    }
}
