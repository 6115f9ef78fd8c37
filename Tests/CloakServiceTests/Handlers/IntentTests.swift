import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 22, intents: what an anonymous caller stores is short-lived until a backend keeps it.
@Suite(.serialized, .tags(.sockets)) struct IntentTests {
    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }
    static func body(_ value: String, format: String = "FPE_SIX_T_FOUR", storage: String = "PERSISTENT") -> String {
        #"{"data":[{"value":"\#(value)","format":"\#(format)","storage":"\#(storage)"}]}"#
    }
    static func record(_ r: RawHTTPClient.Response) -> [String: Any]? { (r.json?["data"] as? [[String: Any]])?.first }
    static func alias(_ r: RawHTTPClient.Response) -> String? {
        (record(r)?["aliases"] as? [[String: Any]])?.first?["alias"] as? String
    }
    static func seconds(_ iso: String?) -> TimeInterval? {
        iso.flatMap { ISO8601DateFormatter().date(from: $0) }?.timeIntervalSince1970
    }

    @Test func anAnonymousRecordIsAnIntentThatExpiresAndATokenHoldersIsNot() throws {
        try withTestServer(TestService()) { server throws in
            let anonymous = try server.client().request("POST", "/tokens", json: Self.body("4111111111111111"))
            #expect(anonymous.status == 201)
            // As requested: the SDK's wire format.
            #expect(Self.record(anonymous)?["storage"] as? String == "PERSISTENT")
            let expires = try #require(Self.seconds(Self.record(anonymous)?["expires_at"] as? String))
            #expect(abs(expires - Date().timeIntervalSince1970 - 86_400) < 120)
            let kept = try server.client().request(
                "POST", "/aliases", json: Self.body("4111111111111111"),
                headers: Self.bearer(TestServer.createOnlyToken))
            #expect(kept.status == 201 && Self.record(kept)?["expires_at"] == nil, "\(kept.text)")
            // An anonymous VOLATILE value expires at the earlier of its two expiries (vault.volatile_ttl_s: 3600).
            let volatile = try server.client().request(
                "POST", "/tokens", json: Self.body("123", format: "UUID", storage: "VOLATILE"))
            let volatileExpiry = try #require(Self.seconds(Self.record(volatile)?["expires_at"] as? String))
            #expect(abs(volatileExpiry - Date().timeIntervalSince1970 - 3_600) < 120)
        }
    }

    @Test func formAnswersCarryTheIntentsExpiryInAHeader() throws {
        try withTestServer(TestService()) { server throws in
            let fields =
                #"{"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123","card_data.exp_date":"12/30","card_data.card_holder":"Jane Doe","customer.ssn":"123-45-6789"}}"#
            let anonymous = try server.client().request("POST", "/forms/checkout/tokens", json: fields)
            #expect(anonymous.status == 200, "\(anonymous.text)")
            let header = try #require(Self.seconds(anonymous.header("Cloak-Intent-Expires")))
            #expect(header - Date().timeIntervalSince1970 <= 86_400 + 60)
            let token = try server.client().request(
                "POST", "/forms/checkout/aliases", json: fields,
                headers: Self.bearer(TestServer.createOnlyToken))
            #expect(token.status == 200 && token.header("Cloak-Intent-Expires") == nil)
        }
    }

    @Test func keepingAnIntentAnswersTheCanonicalAliasAndKeepsTheIntentValid() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let card = "4111111111111111"
            let intent = try #require(Self.alias(try client.request("POST", "/tokens", json: Self.body(card))))
            let canonical = try #require(
                Self.alias(
                    try client.request(
                        "POST", "/aliases", json: Self.body(card),
                        headers: Self.bearer(TestServer.createOnlyToken))))
            #expect(intent != canonical)
            let keepBody =
                #"{"data":[{"alias":"\#(intent)"},{"alias":"tok_sandbox_unknown"},{"alias":"\#(canonical)"},{"alias":"\#(intent)","format":"UUID"}]}"#
            for _ in 0..<2 {  // keeping twice answers the same
                let kept = try client.request(
                    "POST", "/aliases/keep", json: keepBody, headers: Self.bearer(TestServer.createOnlyToken))
                #expect(kept.status == 200, "\(kept.text)")
                let data = try #require(kept.json?["data"] as? [[String: Any]])
                #expect(data.count == 4)
                #expect(data[0]["alias"] as? String == intent)
                #expect((data[0]["canonical"] as? [String: Any])?["alias"] as? String == canonical)
                #expect((data[0]["canonical"] as? [String: Any])?["format"] as? String == "FPE_SIX_T_FOUR")
                // Unknown and not-an-intent look the same.
                #expect(((data[1]["error"] as? [String: Any])?["code"] as? Int) == 1404)
                #expect(((data[2]["error"] as? [String: Any])?["code"] as? Int) == 1404)
                #expect((data[1]["error"] as? NSDictionary) == (data[2]["error"] as? NSDictionary))
                // Another format would be a deterministic target for guessing the value: refused.
                #expect(((data[3]["error"] as? [String: Any])?["code"] as? Int) == 1002 && data[3]["canonical"] == nil)
            }
            // The intent still reveals (a payment in flight with it keeps working).
            let revealed = try client.request("GET", "/aliases/\(intent)", headers: Self.bearer(TestServer.fullToken))
            #expect(revealed.status == 200 && Self.record(revealed)?["value"] as? String == card)
            // Audited by reference, never by alias.
            #expect(server.logs.lines.filter { $0.contains(#""action":"keep""#) }.count == 8)
            #expect(!server.logs.text.contains(intent))
        }
    }

    @Test func keepingNeedsAliasesCreate() throws {
        try withTestServer(TestService()) { server throws in
            let body = #"{"data":[{"alias":"tok_sandbox_x"}]}"#
            #expect(try server.client().request("POST", "/aliases/keep", json: body).status == 401)
            #expect(
                try server.client().request(
                    "POST", "/aliases/keep", json: body, headers: Self.bearer(TestServer.revealOnlyToken)
                ).status == 403)
            for bad in [
                #"{"data":[]}"#, #"{"data":[{"alias":""}]}"#, #"{"data":[{"format":"UUID"}]}"#,
                #"{"data":[{"alias":"a","x":1}]}"#,
                #"{"data":[{"alias":"a","format":"NOPE"}]}"#, #"{"nope":[]}"#, "[]",
            ] {
                let r = try server.client().request(
                    "POST", "/aliases/keep", json: bad, headers: Self.bearer(TestServer.createOnlyToken))
                #expect(r.status == 400 && r.errorCode == 1002, "\(bad): \(r.text)")
            }
        }
    }

    @Test func anExpiredIntentIsGoneAndCannotBeKept() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "    intent_ttl_s: 86400 ", with: "    intent_ttl_s: 1 ")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let intent = try #require(
                Self.alias(try server.client().request("POST", "/tokens", json: Self.body("4111111111111111"))))
            var gone = false
            for _ in 0..<100 where !gone {  // polled: expiry is by the second
                gone =
                    try server.client().request("GET", "/aliases/\(intent)", headers: Self.bearer(TestServer.fullToken))
                    .status == 404
                if !gone { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(gone)
            let kept = try server.client().request(
                "POST", "/aliases/keep", json: #"{"data":[{"alias":"\#(intent)"}]}"#,
                headers: Self.bearer(TestServer.createOnlyToken))
            #expect(
                ((kept.json?["data"] as? [[String: Any]])?.first?["error"] as? [String: Any])?["code"] as? Int == 1404)
        }
    }

    @Test func aZeroTTLKeepsAnonymousRecordsAndCheckConfigWarns() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "    intent_ttl_s: 86400 ", with: "    intent_ttl_s: 0 ")
        let configuration = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
        #expect(configuration.warnings.contains { $0.contains("intent_ttl_s is 0") })
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let r = try server.client().request("POST", "/tokens", json: Self.body("4111111111111111"))
            #expect(r.status == 201 && Self.record(r)?["expires_at"] == nil)
        }
    }
}

/// Issue 22: anonymous intents may hold only `auth.anonymous.max_bucket_share` of one card's
/// aliases (its BIN, last four and length), so no anonymous caller can wear a bucket out.
@Suite(.serialized, .tags(.sockets)) struct BucketShareTests {
    /// 5 places of the 10^5 aliases of a 16-digit FPE_SIX_T_FOUR bucket; intents live 2 s.
    static func server() throws -> TestService {
        let yaml = TestServer.configurationWithTokens
            .replacingOccurrences(of: "    intent_ttl_s: 86400 ", with: "    intent_ttl_s: 2 ")
            .replacingOccurrences(of: "    max_bucket_share: 0.25 ", with: "    max_bucket_share: 0.00005 ")
        return try TestService(yaml: yaml)
    }

    static func tokenize(_ server: TestService, _ card: String, token: String? = nil) throws -> RawHTTPClient.Response {
        try server.client().request(
            token == nil ? "POST" : "POST", token == nil ? "/tokens" : "/aliases",
            json: IntentTests.body(card), headers: token.map { IntentTests.bearer($0) } ?? [])
    }

    @Test func anonymousCallersAreRefusedPastTheirShareAndTokenHoldersAreNot() throws {
        try withTestServer(Self.server()) { server throws in
            // One card, again and again (anonymous: a new record each time): 5 places, then 429.
            let statuses = try (0..<7).map { _ in try Self.tokenize(server, "4111111111111111").status }
            #expect(statuses == [201, 201, 201, 201, 201, 429, 429])
            let refused = try Self.tokenize(server, "4111111111111111")
            #expect(refused.errorCode == 1429 && Int(refused.header("Retry-After") ?? "") ?? 0 >= 1, "\(refused.text)")
            // Token holders still alias new cards of that bucket; other buckets are untouched.
            #expect(
                try Self.tokenize(server, TestCards.cards(1, from: 500)[0], token: TestServer.createOnlyToken)
                    .status == 201)
            #expect(try Self.tokenize(server, "5555555555554444").status == 201)
            let metrics = try server.client().request("GET", "/metrics").text
            #expect(metrics.contains(#"cloak_alias_bucket_refusals_total{format="FPE_SIX_T_FOUR"} 3"#), "\(metrics)")
            // Once the intents expire (2 s) and are swept (every 5 s) the bucket takes anonymous
            // aliases again (polled).
            var again = false
            for _ in 0..<300 where !again {
                again = try Self.tokenize(server, "4111111111111111").status == 201
                if !again { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(again)
        }
    }
}

/// An anonymous `POST /tokens` pays its address's bucket one request per value.
@Suite(.tags(.sockets)) struct AnonymousValueChargeTests {
    @Test func aBatchCostsItsValues() throws {
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "anonymous: {requests_per_minute: 10000000, burst: 1000000}",
            with: "anonymous: {requests_per_minute: 1, burst: 10}")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let ten =
                #"{"data":["# + (0..<10).map { #"{"value":"v\#($0)","format":"UUID"}"# }.joined(separator: ",") + "]}"
            #expect(try server.client().request("POST", "/tokens", json: ten).status == 201)
            let next = try server.client().request(
                "POST", "/tokens", json: #"{"data":[{"value":"x","format":"UUID"}]}"#)
            #expect(next.status == 429 && next.errorCode == 1429, "\(next.text)")
        }
    }
}

/// The review of the lifecycle work: what keep, ttl_s and metadata may not be turned into.
@Suite(.serialized, .tags(.sockets)) struct LifecycleHardeningTests {
    @Test func aVolatileIntentIsNotKept() throws {
        try withTestServer(TestService()) { server throws in
            let intent = try #require(
                IntentTests.alias(
                    try server.client().request(
                        "POST", "/tokens", json: IntentTests.body("123", format: "UUID", storage: "VOLATILE"))))
            let kept = try server.client().request(
                "POST", "/aliases/keep", json: #"{"data":[{"alias":"\#(intent)"}]}"#,
                headers: IntentTests.bearer(TestServer.createOnlyToken))
            #expect(
                ((kept.json?["data"] as? [[String: Any]])?.first?["error"] as? [String: Any])?["code"] as? Int == 1002,
                "\(kept.text)")
        }
    }

    @Test func ttlOnACreateNeedsRevealAndAnonymousCallersSetNeither() throws {
        try withTestServer(TestService()) { server throws in
            let ttl = #"{"data":[{"value":"v","format":"UUID","ttl_s":60}]}"#
            let creator = try server.client().request(
                "POST", "/aliases", json: ttl, headers: IntentTests.bearer(TestServer.createOnlyToken))
            #expect(creator.status == 403 && creator.errorCode == 1301, "\(creator.text)")
            #expect(
                try server.client().request(
                    "POST", "/aliases", json: ttl, headers: IntentTests.bearer(TestServer.fullToken)
                ).status == 201)
            for item in [ttl, #"{"data":[{"value":"v","format":"UUID","metadata":{"status":"paid"}}]}"#] {
                let anonymous = try server.client().request("POST", "/tokens", json: item)
                #expect(anonymous.status == 400 && anonymous.errorCode == 1002, "\(anonymous.text)")
            }
        }
    }

    @Test func aVolatileValueNeverOutlivesTheVolatileTTL() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/aliases",
                json: #"{"data":[{"value":"123","format":"UUID","storage":"VOLATILE","ttl_s":315360000}]}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            let expires = try #require(IntentTests.seconds(IntentTests.record(r)?["expires_at"] as? String))
            #expect(expires - Date().timeIntervalSince1970 <= 3_600 + 60)
        }
    }

    @Test func cardsInATokenFormatCountAgainstTheirBINAndLastFour() throws {
        // A holder of a card's UUID alias who knows its BIN and last four (a receipt) must not
        // find it by aliasing every candidate as a UUID.
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  bucket_values_per_hour: 30 ", with: "  bucket_values_per_hour: 5 ")
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let six = TestCards.body(TestCards.cards(6), format: "UUID")
            let r = try server.client().request(
                "POST", "/aliases", json: six, headers: IntentTests.bearer(TestServer.createOnlyToken))
            #expect(r.status == 429 && r.errorCode == 1429, "\(r.text)")
        }
    }
}
