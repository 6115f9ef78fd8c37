import CloakCore
import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 8 §2 (first step): inbound routes with `request: [{redact: ...}]` on any payload.
@Suite(.serialized, .tags(.sockets)) struct RouteOperationTests {
    static func yaml(_ upstream: Int) -> String {
        TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                    path: /orders
                    upstream: "http://127.0.0.1:\(upstream)/orders"
                    methods: [POST, PUT]
                    request:
                      - {redact: {json: ["$.payment.card_number", "$..pan"], form: ["card[number]"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                      - {redact: {form: ["card[cvc]"], header: ["X-Card-Cvc"], format: UUID, storage: VOLATILE}}

                """)
    }

    @Test func selectedJSONValuesBecomeAliasesAndTheRestIsKept() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let body =
                #"{"order":"o-1","payment":{"card_number":"4111111111111111","amount":10},"items":[{"pan":"5555555555554444"}]}"#
            let r = try server.client().request("POST", "/proxy/orders", json: body)
            #expect(r.status == 204, "\(r.text)")
            let seen = upstream.text
            #expect(!seen.contains("4111111111111111") && !seen.contains("5555555555554444"), "\(seen)")
            let sent = try #require(seen.components(separatedBy: "\r\n\r\n").last)
            let json = try JSONParser().parse(sent)
            #expect(json["order"] == .string("o-1"))
            let card = try #require(json["payment"]?["card_number"]?.stringValue)
            #expect(card.count == 16 && card.hasPrefix("411111") && card.hasSuffix("1111"))
            #expect(json["payment"]?["amount"] == .number("10"))
        }
    }

    @Test func formsAndHeadersAreRedactedAndUnselectedPairsKeepTheirBytes() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let body = "amount=100&card%5Bnumber%5D=4111111111111111&card[cvc]=123&note=a+b%21"
            let r = try server.client().request(
                "POST", "/proxy/orders", body: Array(body.utf8),
                headers: [("Content-Type", "application/x-www-form-urlencoded"), ("X-Card-Cvc", "737")])
            #expect(r.status == 204, "\(r.text)")
            let seen = upstream.text
            let sent = try #require(seen.components(separatedBy: "\r\n\r\n").last)
            #expect(sent.hasPrefix("amount=100&card%5Bnumber%5D=411111") && sent.hasSuffix("&note=a+b%21"), "\(sent)")
            #expect(sent.contains("card[cvc]=tok_sandbox_"))
            #expect(!seen.contains("4111111111111111") && !seen.contains("X-Card-Cvc: 737"))
            #expect(seen.contains("X-Card-Cvc: tok_sandbox_"))
        }
    }

    /// A body with nothing selected goes on byte-identical; a body the route's selectors cannot
    /// read (another type, none, two) is refused and nothing is forwarded: it would pass unread,
    /// with whatever card number it holds (`fetch` sends text/plain unless told otherwise).
    @Test func aBodyWithNothingSelectedGoesOnByteIdenticalAndOneOfAnotherKindIsRefused() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let client = try server.client()
            let json = #"{ "order" : "o-2",  "payment" : {} }"#
            #expect(try client.request("POST", "/proxy/orders", json: json).status == 204)
            let text = #"{"payment":{"card_number":"4111111111111111"}}"#
            for headers in [
                [("Content-Type", "text/plain")],
                [("Content-Type", "text/plain"), ("Content-Type", "application/json")],
                [("Content-Type", "application/json"), ("Connection", "content-type")],
            ] {
                let r = try client.request("POST", "/proxy/orders", body: Array(text.utf8), headers: headers)
                #expect(r.status == 400 && r.errorCode == 1002, "\(headers): \(r.status) \(r.text)")
                #expect(!r.text.contains("4111111111111111"))
            }
            let seen = upstream.text
            #expect(seen.contains("\r\n\r\n" + json))
            #expect(!seen.contains("4111111111111111"))
        }
    }

    @Test func malformedBodiesAndNonScalarSelectionsAre1002AndNothingIsForwarded() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let client = try server.client()
            let broken = try client.request(
                "POST", "/proxy/orders", json: #"{"payment":{"card_number":"4111111111111111""#)
            #expect(broken.status == 400 && broken.errorCode == 1002 && !broken.text.contains("4111"))
            let object = try client.request(
                "POST", "/proxy/orders", json: #"{"payment":{"card_number":{"n":"4111111111111111"}}}"#)
            #expect(
                object.status == 400 && object.text.contains("$.payment.card_number") && !object.text.contains("4111"))
            let form = try client.request(
                "POST", "/proxy/orders", body: Array("card%5Bnumber%5D=%zz".utf8),
                headers: [("Content-Type", "application/x-www-form-urlencoded")])
            #expect(form.status == 400 && form.errorCode == 1002)
            #expect(upstream.text.isEmpty)
        }
    }

    @Test func aMessageSelectingMoreValuesThanABatchIsRefused() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let items = (0..<101).map { _ in #"{"pan":"4111111111111111"}"# }.joined(separator: ",")
            let r = try server.client().request("POST", "/proxy/orders", json: #"{"items":[\#(items)]}"#)
            #expect(r.status == 400 && r.errorCode == 1002 && r.text.contains("max_batch"), "\(r.text)")
            #expect(upstream.text.isEmpty)
        }
    }

    @Test(arguments: [
        (
            "{id: \"0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /p, upstream: echo, form: checkout, request: [{redact: {json: [\"$.a\"]}}]}",
            "routes[0].form"
        ),
        (
            "{id: \"0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /p, upstream: echo, request: [{redact: {json: [\"a.b\"]}}]}",
            "routes[0].request[0].redact.json[0]"
        ),
        (
            "{id: \"0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /p, upstream: echo, request: [{redact: {format: UUID}}]}",
            "routes[0].request[0].redact"
        ),
        (
            "{id: \"0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /p, upstream: echo, request: [{redact: {header: [\"X Bad\"]}}]}",
            "routes[0].request[0].redact.header[0]"
        ),
        (
            "{id: \"0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /p, upstream: echo, request: [{redact: {form: [a], format: NOPE}}]}",
            "routes[0].request[0].redact.format"
        ),
    ])
    func checkConfigNamesBadOperations(route: String, path: String) {
        let yaml = TestServer.shippedConfiguration.replacingOccurrences(of: "routes: []", with: "routes: [\(route)]")
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        #expect(error?.issues.contains { $0.path == path } == true, "\(error?.issues.map(\.path) ?? [])")
    }
}
