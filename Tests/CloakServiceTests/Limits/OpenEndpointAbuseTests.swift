import CloakTesting
import Foundation
import Testing

/// What a page of another origin, or anyone without a token, can make the open endpoints do (an
/// attacker's read of the browser-facing side): no writes through a visitor's browser without
/// a preflight, no large records, no card numbers in clear beside a record, and Elements still
/// loads where its origin is listed twice.
@Suite(.tags(.sockets)) struct OpenEndpointAbuseTests {
    static let card = #"{"data":[{"value":"4111111111111111","format":"UUID"}]}"#
    static let fields = #"{"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123"}}"#

    /// A "simple" cross-origin request (text/plain, a form encoding, no type) goes without a
    /// preflight: the storing endpoints refuse it, and store nothing.
    @Test(
        arguments: [
            [("Content-Type", "text/plain")], [("Content-Type", "application/x-www-form-urlencoded")], [],
            [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
        ] as [[(String, String)]])
    func storingEndpointsTakeJSONOnly(headers: [(String, String)]) throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let origin = [("Origin", "https://evil.example")]
            for (path, body) in [
                ("/tokens", Self.card), ("/forms/checkout/tokens", Self.fields), ("/forms/checkout/send", Self.fields),
            ] {
                let r = try client.request("POST", path, body: Array(body.utf8), headers: origin + headers)
                #expect(r.status == 400 && r.errorCode == 1002, "\(path) \(headers): \(r.status) \(r.text)")
            }
            let json = try client.request("POST", "/tokens", json: Self.card, headers: origin)
            #expect(json.status == 201, "\(json.text)")
        }
    }

    @Test func anAnonymousValueIsAtMostOneKilobyte() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let big = String(repeating: "a", count: 1_025)
            let body = #"{"data":[{"value":"\#(big)","format":"UUID"}]}"#
            let anonymous = try client.request("POST", "/tokens", json: body)
            #expect(
                anonymous.status == 400 && [1001, 1002].contains(anonymous.errorCode ?? 0), "\(anonymous.text)")
            #expect(!anonymous.text.contains(big))
            let small = try client.request(
                "POST", "/tokens", json: #"{"data":[{"value":"\#(String(big.dropLast()))","format":"UUID"}]}"#)
            #expect(small.status == 201, "\(small.text)")
            let creator = try client.request(
                "POST", "/aliases", json: body, headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
            #expect(creator.status == 201, "a token holder stores up to 32 KiB: \(creator.text)")
        }
    }

    @Test(arguments: ["4111111111111111", "123-45-6789", "card:4111-1111-1111-1111"])
    func aClassifierHoldingACardNumberIsRefused(classifier: String) throws {
        try withTestServer(TestService()) { server throws in
            let body = #"{"data":[{"value":"x-1","format":"UUID","classifiers":["\#(classifier)"]}]}"#
            let r = try server.client().request("POST", "/tokens", json: body)
            #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
            #expect(!r.text.contains(classifier))
            let fine = try server.client().request(
                "POST", "/tokens", json: #"{"data":[{"value":"x-1","format":"UUID","classifiers":["card","v2"]}]}"#)
            #expect(fine.status == 201, "\(fine.text)")
        }
    }

    /// Elements' assets name their readers (`*`); an origin listed in `cors.allowed_origins` too
    /// must not get a second Access-Control-Allow-Origin (browsers refuse the answer then).
    @Test func anAssetCarriesOneAllowOriginWhereTheOriginIsListedTwice() throws {
        let origin = "http://localhost:8000"
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "  allowed_origins: []", with: "  allowed_origins: [\"\(origin)\"]")
        #expect(yaml != TestServer.configurationWithTokens)
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let r = try server.client().request("GET", "/elements/v1/cloak.js", headers: [("Origin", origin)])
            #expect(r.status == 200)
            let allow = r.headers.filter { $0.name.lowercased() == "access-control-allow-origin" }
            #expect(allow.count == 1, "\(allow)")
            // An answer without one of its own still names the listed origin.
            let health = try server.client().request("GET", "/healthz", headers: [("Origin", origin)])
            #expect(health.header("Access-Control-Allow-Origin") == origin)
        }
    }
}
