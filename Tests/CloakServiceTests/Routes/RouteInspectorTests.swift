import CloakCore
import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// The route inspector (issue 59, item 2): what a route would send for a sample, with markers
/// for every selected value, the selectors that took nothing named, what `unselected_cards`
/// would refuse, and each step's headers from a throwaway key. Nothing is sent, nothing stored.
@Suite struct RouteInspectorTests {
    static let keys = StepKeys.shared

    static func configuration(egress request: String = "- {reveal: {json: [\"$.card\"]}}", inbound: String? = nil)
        throws -> ServiceConfiguration
    {
        var yaml = TestServer.shippedConfiguration
        if let inbound {
            yaml = yaml.replacingOccurrences(
                of: "routes: []",
                with: """
                    routes:
                      - id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                        path: /orders
                        upstream: "https://shop-backend.example/orders"
                        request:
                          - \(inbound)
                    """)
        }
        yaml += """

            egress:
              routes:
                - id: psp
                  upstream: "https://psp.example"
                  paths: ["/v1/*"]
                  request:
                    \(request.replacingOccurrences(of: "\n", with: "\n        "))
            """
        return try ServiceConfiguration.parse(yaml: yaml, environment: StepKeys.environment)
    }

    static func test(_ c: ServiceConfiguration, route: String = "psp", _ sample: String) throws -> [String: Any] {
        let tested = try RouteInspector.test(c, route: route, sample: Array(sample.utf8))
        let json = JSONWriter.string(tested.report)
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    static let sample = #"""
        {"method":"POST","path":"/v1/charges","headers":{"Content-Type":"application/json"},
         "body":{"card":"tok_sandbox_4ft1BgEe4RiGUK3RBGZc44","amount":1000}}
        """#

    @Test func aRevealIsAMarkerAndTheRequestIsShownWhole() throws {
        let report = try Self.test(try Self.configuration(), Self.sample)
        #expect(report["would_send"] as? Bool == true)
        let request = try #require(report["request"] as? [String: Any])
        #expect(request["url"] as? String == "https://psp.example/v1/charges")
        #expect(request["method"] as? String == "POST")
        let body = try #require(request["body"] as? String)
        #expect(body == #"{"card":"<revealed $.card>","amount":1000}"#)
        let selectors = try #require(report["selectors"] as? [String: [String]])
        #expect(selectors["matched"] == ["$.card"] && selectors["missed"] == [] && selectors["revealed"] == ["$.card"])
    }

    @Test func aMistypedSelectorIsNamedAndItsValueGoesAsItCame() throws {
        let c = try Self.configuration(egress: "- {reveal: {json: [\"$.card_numbr\"]}}")
        let report = try Self.test(c, Self.sample)
        let selectors = try #require(report["selectors"] as? [String: [String]])
        #expect(selectors["missed"] == ["$.card_numbr"] && selectors["matched"] == [])
        let body = try #require((report["request"] as? [String: Any])?["body"] as? String)
        #expect(body.contains("tok_sandbox_4ft1BgEe4RiGUK3RBGZc44"))
    }

    @Test func anInboundRouteShowsTheCardItsSelectorsMissedWouldBeRefused() throws {
        let c = try Self.configuration(
            inbound: "{redact: {json: [\"$.card_numbr\"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}")
        let tested = try RouteInspector.test(
            c, route: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10",
            sample: Array(
                #"{"method":"POST","path":"","headers":{"Content-Type":"application/json"},"body":{"card":"4111111111111111"}}"#
                    .utf8))
        #expect(!tested.wouldSend)
        let text = JSONWriter.string(tested.report)
        #expect(text.contains(#""missed":["$.card_numbr"]"#))
        #expect(text.contains(#""unselected_cards_found":1"#))
        #expect(text.contains(#""refusal":{"code":"#))
        // A redact selector that takes the card sends its marker instead.
        let fixed = try Self.configuration(
            inbound: "{redact: {json: [\"$.card\"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}")
        let sent = try RouteInspector.test(
            fixed, route: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10",
            sample: Array(
                #"{"method":"POST","path":"","headers":{"Content-Type":"application/json"},"body":{"card":"4111111111111111"}}"#
                    .utf8))
        #expect(sent.wouldSend)
        let shown = JSONWriter.string(sent.report)
        #expect(shown.contains("<redacted $.card as FPE_SIX_T_FOUR>") && !shown.contains("4111111111111111"))
    }

    @Test func stepsSignWithAThrowawayKeyAndShowOnlyTheSignaturesSize() throws {
        let k = Self.keys
        let c = try Self.configuration(
            egress: """
                - {reveal: {json: ["$.card"]}}
                - {digest: {header: Content-Digest}}
                - {http_signature: {algorithm: rsa-pss-sha512, key: "file:\(k.privateKey("rsa"))", keyid: psp-1, components: ["@method", content-digest]}}
                - {hmac_header: {key: "env:STEP_SECRET", header: X-Mac}}
                """)
        let report = try Self.test(c, Self.sample)
        #expect(report["would_send"] as? Bool == true, "\(report)")
        let steps = try #require(report["steps"] as? [[String: Any]])
        #expect(steps.map { $0["name"] as? String } == ["digest", "http_signature", "hmac_header"])
        #expect((steps[1]["key"] as? String)?.hasPrefix("a throwaway RSA 2048-bit private key") == true)
        let signature = try #require((steps[1]["headers"] as? [[String]])?.first { $0[0] == "Signature" })
        #expect(signature[1].hasPrefix("<signature: ") && signature[1].hasSuffix(" bytes>"), "\(signature)")
        #expect(
            (steps[1]["headers"] as? [[String]])?.contains {
                $0[0] == "Signature-Input" && $0[1].contains("keyid=\"psp-1\"")
            } == true)
        #expect((steps[2]["headers"] as? [[String]])?.first?[1].hasPrefix("<signature: ") == true)
        // The sent headers carry the same markers, never a signature's bytes.
        let sent = try #require((report["request"] as? [String: Any])?["headers"] as? [[String]])
        #expect(sent.first { $0[0] == "X-Mac" }?[1].hasPrefix("<signature: ") == true)
    }

    @Test func theThrowawayKeyIsNeverTheRoutes() throws {
        let real = try AsymmetricKey.read(file: Self.keys.privateKey("rsa"))
        let (made, text) = try RouteInspector.throwaway(.privateKey(real))
        guard case let .privateKey(key) = made else { Issue.record("not a private key"); return }
        let message = Array("the signature base".utf8)
        let signature = try key.sign(message, .rsaPSSSHA512)
        #expect(!real.verify(signature, over: message, .rsaPSSSHA512))
        #expect(key.kind == real.kind && key.bits == real.bits)
        #expect(text == "a throwaway RSA 2048-bit private key (the route's is RSA 2048-bit)")
    }

    @Test(arguments: [
        "[]", #"{"path":"/"}"#, #"{"method":"BREW","path":"/"}"#, #"{"method":"GET","path":"x"}"#,
        #"{"method":"GET","path":"/","extra":1}"#, #"{"method":"GET","path":"/","headers":{"X":1}}"#,
        #"{"method":"GET","path":"/","headers":{"Bad Name":"v"}}"#,
        #"{"method":"GET","path":"/","headers":{"X":"a\r\nb"}}"#,
        #"{"method":"GET","path":"/","body":{},"body_text":""}"#, "not json",
    ])
    func malformedSamplesAreRefusedWithoutQuotingThem(sample: String) throws {
        let c = try Self.configuration()
        #expect(throws: CloakError.self) { try RouteInspector.test(c, route: "psp", sample: Array(sample.utf8)) }
        #expect(throws: CloakError.self) { try RouteInspector.test(c, route: "nope", sample: Array(Self.sample.utf8)) }
    }
}

/// The inspector over the API, on a real node: scoped, audited, and the sample never logged.
@Suite(.tags(.processes, .sockets)) struct RouteInspectorEndToEndTests {
    @Test func aTokenWithRoutesTestSeesWhatARouteWouldSend() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/cloak.db", directory: directory.path, scopes: "routes:test, audit:read"
        ) { yaml in
            yaml + """

                egress:
                  routes:
                    - {id: psp, upstream: "https://psp.example", paths: ["/v1/*"], request: [{reveal: {json: ["$.card_numbr"]}}]}
                """
        }
        defer { node.stop() }
        let bearer = [("Authorization", "Bearer \(CloakNode.token)")]
        let tested = try node.client().request(
            "POST", "/admin/routes/psp/test", json: RouteInspectorTests.sample, headers: bearer)
        #expect(tested.status == 200, "\(tested.text)")
        #expect(tested.header("Cache-Control")?.contains("no-store") == true)
        #expect((tested.json?["selectors"] as? [String: [String]])?["missed"] == ["$.card_numbr"])
        #expect(
            try node.client().request(
                "POST", "/admin/routes/nope/test", json: RouteInspectorTests.sample, headers: bearer
            ).status == 404)
        #expect(try node.client().request("POST", "/admin/routes/psp/test", json: "[]", headers: bearer).status == 400)
        #expect(
            try node.client().request("POST", "/admin/routes/psp/test", json: RouteInspectorTests.sample).status == 401)
        let audit = try node.client().request("GET", "/admin/audit?action=routes_test", headers: bearer)
        let events = try #require(audit.json?["data"] as? [[String: Any]])
        #expect(events.count == 1 && (events.first?["facts"] as? [String: String])?["route"] == "psp")
        // The CLI answers the same, from the configuration alone, and exits 0 (would send).
        let sample = "\(directory.path)/sample.json"
        try RouteInspectorTests.sample.write(toFile: sample, atomically: true, encoding: .utf8)
        let cli = try node.command(["routes", "test", "psp", "--request", sample])
        #expect(cli.status == 0 && cli.output.contains(#""missed":["$.card_numbr"]"#), "\(cli.output)")
        node.stop()
        #expect(!node.log.contains("tok_sandbox_4ft1BgEe4RiGUK3RBGZc44"))
    }
}
