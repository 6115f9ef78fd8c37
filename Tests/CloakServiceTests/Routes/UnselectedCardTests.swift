import CloakCore
import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 57 item 3: an inbound route fails closed. A card number no selector took (a typo, a field
/// nobody named) is never forwarded; a required selector that takes nothing refuses; the logs
/// name the selectors that matched and those that did not.
@Suite(.serialized, .tags(.racy, .sockets)) struct UnselectedCardTests {
    static let route = "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"

    static func yaml(_ upstream: Int, mode: String? = nil, selector: String = #""$.payment.card_numbr""#) -> String {
        TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - id: "\(route)"
                    path: /orders
                    upstream: "http://127.0.0.1:\(upstream)/orders"
                    \(mode.map { "unselected_cards: \($0)" } ?? "")
                    request:
                      - {redact: {json: [\(selector)], format: FPE_T_FOUR, storage: PERSISTENT}}
                  - id: "1c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                    path: /plain
                    upstream: "http://127.0.0.1:\(upstream)/plain"

                """)
    }

    static let card = "4111 1111 1111 1111"
    static let body = #"{"order":"o-1","payment":{"card_number":"4111 1111 1111 1111","amount":10}}"#

    @Test func aSelectorWithATypoRefusesTheRequestNamingThePathNeverTheCard() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let r = try server.client().request("POST", "/proxy/orders", json: Self.body)
            #expect(r.status == 422 && r.errorCode == 1001, "\(r.text)")
            #expect(r.text.contains(Self.route) && r.text.contains("$.payment.card_number"), "\(r.text)")
            #expect(!r.text.contains("4111") && !server.logs.text.contains("4111 1111"))
            #expect(upstream.bytes.isEmpty, "nothing was forwarded")
            // The access line names the selector that took nothing.
            #expect(server.logs.text.contains(#""selectors_missed":"$.payment.card_numbr""#), "\(server.logs.text)")
        }
    }

    @Test func cardsInTheQueryAHeaderAFormAndAnyTextAreRefusedToo() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port))) { server throws in
            let client = try server.client()
            let cases: [(String, [UInt8], [(String, String)], String)] = [
                (
                    "/proxy/orders?pan=4111-1111-1111-1111", Array(#"{"a":1}"#.utf8),
                    [("Content-Type", "application/json")], "query:pan"
                ),
                (
                    "/proxy/orders", Array(#"{"a":1}"#.utf8),
                    [("Content-Type", "application/json"), ("X-Card", Self.card)], "header:X-Card"
                ),
                (
                    "/proxy/plain", Array("note=pay+with+378282246310005".utf8),
                    [("Content-Type", "application/x-www-form-urlencoded")], "form:note"
                ),
                (
                    "/proxy/plain", Array("card 5555555555554444 exp 12/30".utf8), [("Content-Type", "text/plain")],
                    "body"
                ),
                (
                    "/proxy/orders", Array(#"{"items":[{"pan":36227206271667}]}"#.utf8),
                    [("Content-Type", "application/json")], "$.items[0].pan"
                ),
                // What the review found could hide one: an exponent, a bad escape beside a good one,
                // the path, a header's name, JSON escapes in a body that is not parsed as JSON.
                (
                    "/proxy/orders", Array(#"{"n":4.111111111111111e15}"#.utf8), [("Content-Type", "application/json")],
                    "$.n"
                ),
                (
                    "/proxy/orders?pan=%34%31%31%31111111111111%FF", Array(#"{"a":1}"#.utf8),
                    [("Content-Type", "application/json")], "query:pan"
                ),
                ("/proxy/plain/cards/4111111111111111", [], [], "path"),
                (
                    "/proxy/orders", Array(#"{"a":1}"#.utf8),
                    [("Content-Type", "application/json"), ("4111111111111111", "x")], "header:<card>"
                ),
                (
                    "/proxy/plain", Array(#"{"a":"\u0034111111111111111"}"#.utf8), [("Content-Type", "text/plain")],
                    "body"
                ),
            ]
            for (path, body, headers, place) in cases {
                let r = try client.request("POST", path, body: body, headers: headers)
                #expect(r.status == 422 && r.text.contains(place), "\(place): \(r.status) \(r.text)")
            }
            #expect(upstream.bytes.isEmpty)
            // Bodies that cannot be read for cards are refused rather than passed on unread.
            for (header, value) in [("Content-Encoding", "gzip"), ("Content-Type", "text/plain; charset=utf-16")] {
                let r = try client.request(
                    "POST", "/proxy/plain", body: Array("abc".utf8),
                    headers: [("Content-Type", "text/plain"), (header, value)])
                #expect(r.status == 400, "\(header): \(r.status) \(r.text)")
            }
            #expect(upstream.bytes.isEmpty)
        }
    }

    @Test func theRoutesOwnAliasesAndTheVaultsAreNotCards() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port, selector: #""$.payment.card_number""#))) {
            server throws in
            let client = try server.client()
            // A card-shaped alias made earlier (Luhn-valid, a known brand's prefix) in a field no selector names.
            let made = try client.request(
                "POST", "/aliases",
                json: #"{"data":[{"value":"5555555555554444","format":"FPE_T_FOUR","storage":"PERSISTENT"}]}"#,
                headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
            let alias = try #require(
                (((made.json?["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]])?.first?["alias"]
                    as? String), "\(made.text)")
            let body = #"{"payment":{"card_number":"4111 1111 1111 1111"},"saved":"\#(alias)"}"#
            let r = try client.request("POST", "/proxy/orders", json: body)
            #expect(r.status == 204, "\(r.text)")
            #expect(!upstream.text.contains("4111 1111 1111 1111") && upstream.text.contains(alias))
            #expect(server.logs.text.contains(#""selectors_matched":"$.payment.card_number""#))
        }
    }

    @Test func redactAliasesWhatNoSelectorTookAndAllowForwardsIt() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestService(yaml: Self.yaml(upstream.port, mode: "redact"))) { server throws in
            let r = try server.client().request("POST", "/proxy/orders", json: Self.body)
            #expect(r.status == 204, "\(r.text)")
            let sent = try #require(upstream.text.components(separatedBy: "\r\n\r\n").last)
            let number = try #require(try JSONParser().parse(sent)["payment"]?["card_number"]?.stringValue)
            #expect(number != Self.card && number.hasSuffix("1111") && number.count == Self.card.count, "\(sent)")

            let open = RawUpstream()
            defer { open.stop() }
            let allowing = try TestService(yaml: Self.yaml(open.port, mode: "allow"))
            defer { allowing.stop() }
            #expect(try allowing.client().request("POST", "/proxy/orders", json: Self.body).status == 204)
            #expect(open.text.contains(Self.card))
        }
    }

    @Test func aRequiredSelectorThatTakesNothingRefuses() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let yaml = Self.yaml(upstream.port, mode: "allow", selector: #"{path: "$.payment.card_numbr", required: true}"#)
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let r = try server.client().request("POST", "/proxy/orders", json: Self.body)
            #expect(r.status == 422 && r.text.contains("$.payment.card_numbr"), "\(r.text)")
            #expect(upstream.bytes.isEmpty)
            #expect(throws: ConfigurationError.self) {
                try ServiceConfiguration.parse(yaml: Self.yaml(1, mode: "sometimes"))
            }
        }
    }

    /// What counts as a card (``CardScan``), as a table.
    @Test(arguments: [
        ("4111111111111111", ["4111111111111111"]),
        ("4111 1111 1111 1111", ["4111 1111 1111 1111"]),
        ("pay 4111-1111-1111-1111-12/30 now", ["4111-1111-1111-1111"]),
        ("4111111111111111 5555555555554444", ["4111111111111111", "5555555555554444"]),
        ("378282246310005", ["378282246310005"]),
        ("4111111111111112", []),  // Luhn fails
        ("1732636800000", []),  // a timestamp in ms: no brand starts 17
        ("41111111111111111111111", []),  // 23 digits: an identifier
        ("4111  1111 1111 1111", ["4111  1111 1111 1111"]),  // up to three separators in a row
        ("4111    1111 1111 1111", []),  // four end the run
        ("4111.1111.1111.1111", ["4111.1111.1111.1111"]),
        ("4111_1111/1111\u{00A0}1111", ["4111_1111/1111\u{00A0}1111"]),
        ("４１１１１１１１１１１１１１１１", ["４１１１１１１１１１１１１１１１"]),  // full-width
        ("4111\u{200B}1111\u{200B}1111\u{200B}1111", ["4111\u{200B}1111\u{200B}1111\u{200B}1111"]),
        ("order 12345", []),
    ])
    func cardScanFindsCardsAndOnlyThem(text: String, cards: [String]) {
        #expect(CardScan.cards(in: text).map(String.init) == cards)
    }

    @Test func integersWrittenWithExponentsAreRead() {
        #expect(CardScan.integerDigits("4.111111111111111e15") == "4111111111111111")
        #expect(CardScan.integerDigits("4111111111111111.000") == "4111111111111111")
        #expect(CardScan.integerDigits("1.5") == nil && CardScan.integerDigits("12") == nil)
    }

    /// Linear: a megabyte of one-digit groups is looked through in one pass.
    @Test func aMegabyteOfShortGroupsIsScannedOnce() {
        #expect(CardScan.cards(in: String(repeating: "1 ", count: 500_000)).isEmpty)
    }

    @Test func jsonPlacesArePathsAndACardKeyIsNotRepeated() throws {
        let found = try #require(CardScan.json(Array(#"{"a b":{"x":["4111111111111111"]},"4111111111111111":1}"#.utf8)))
        #expect(found.map(\.place) == ["$['a b'].x[0]", "$['<card>']"])
        #expect(found.map(\.whole) == [true, false])
    }
}

/// Issue 57 item 3 on form routes: the form's own aliases go on; a card field the form does not
/// tokenize would forward the raw card, and is refused.
@Suite(.tags(.sockets)) struct UnselectedCardFormRouteTests {
    @Test func aFormRouteForwardsItsAliasesAndRefusesARawCard() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let yaml = TestServer.configurationWithTokens
            .replacingOccurrences(
                of: "routes: []",
                with: """
                    routes:
                      - {id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10", path: /pay, form: safe, upstream: "http://127.0.0.1:\(upstream.port)/pay"}
                      - {id: "1c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10", path: /raw, form: raw, upstream: "http://127.0.0.1:\(upstream.port)/raw"}

                    """
            )
            .replacingOccurrences(
                of: "forms:\n",
                with: """
                    forms:
                      safe: {fields: [{name: n, type: cardNumber, tokenization: {format: FPE_T_FOUR, storage: PERSISTENT}}]}
                      raw: {fields: [{name: n, type: cardNumber}]}

                    """)
        try withTestServer(TestService(yaml: yaml)) { server throws in
            let client = try server.client()
            let body = #"{"fields":{"n":"4111 1111 1111 1111"}}"#
            let safe = try client.request("POST", "/proxy/pay", json: body)
            #expect(safe.status == 204, "\(safe.text)")
            #expect(!upstream.text.contains("4111 1111 1111 1111") && !upstream.text.contains("4111111111111111"))
            let raw = try client.request("POST", "/proxy/raw", json: body)
            #expect(raw.status == 422 && raw.text.contains("$.n"), "\(raw.text)")
            #expect(!upstream.text.contains("/raw"), "nothing of the raw card's request went upstream")
        }
    }
}
