import CloakCore
import CloakTesting
import Foundation
import Testing

/// Issue 8 §2: inbound routes with `response:` operations and `reveal`, against a real HTTPS
/// upstream that answers with what it received.
@Suite(.serialized, .tags(.sockets)) struct InboundTransformTests {
    /// Runs `body` with a Cloak (called in process) whose routes go to a fresh HTTPS upstream
    /// (certificates by openssl).
    static func withServer(_ body: (TestService, TLSUpstream) throws -> Void) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try TLSUpstream(certificates: certificates)
        defer { upstream.stop() }
        try withTestServer(Self.server(upstream, certificates)) { server throws in
            try body(server, upstream)
        }
    }

    static func server(_ upstream: TLSUpstream, _ certificates: TestCertificates) throws -> TestService {
        try TestService(
            yaml: TestServer.configurationWithTokens.replacingOccurrences(
                of: "routes: []",
                with: """
                    routes:
                      - id: "0c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                        path: /orders
                        upstream: "https://127.0.0.1:\(upstream.port)/orders"
                        ca_file: "\(certificates.caFile)"
                        unselected_cards: allow     # the client sends its backend cards here on purpose
                        response:
                          - {redact: {json: ["$..pan"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                      - id: "1c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                        path: /payouts
                        upstream: "https://127.0.0.1:\(upstream.port)/payouts"
                        ca_file: "\(certificates.caFile)"
                        request:
                          - {reveal: {json: ["$.card"]}}
                      - id: "2c4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                        path: /dead
                        upstream: "http://127.0.0.1:1/dead"
                        response:
                          - {redact: {json: ["$..description"], format: UUID, storage: VOLATILE}}

                    """))
    }

    @Test func theUpstreamsAnswerIsRedactedBeforeTheClientSeesIt() throws {
        try Self.withServer { server, upstream in
            let r = try server.client().request(
                "POST", "/proxy/orders", json: #"{"items":[{"pan":"4111111111111111","qty":2}]}"#)
            #expect(r.status == 200, "\(r.text)")
            #expect(upstream.received.last?.body == #"{"items":[{"pan":"4111111111111111","qty":2}]}"#)
            let json = try JSONParser().parse(r.body)
            guard case let .array(items)? = json["items"], let item = items.first else {
                Issue.record("no items"); return
            }
            let pan = try #require(item["pan"]?.stringValue)
            #expect(pan != "4111111111111111" && pan.hasPrefix("411111") && pan.hasSuffix("1111"))
            #expect(item["qty"] == .number("2"))
        }
    }

    /// An answer is bounded like a request (vault.max_batch, 100 here): an upstream cannot make
    /// one exchange a vault job of any size.
    @Test func anUpstreamAnswerSelectingMoreThanTheBatchLimitIs502AndNothingOfItPasses() throws {
        try Self.withServer { server, upstream in
            let items = (0..<101).map { _ in #"{"pan":"4111111111111111"}"# }.joined(separator: ",")
            let r = try server.client().request("POST", "/proxy/orders", json: #"{"items":[\#(items)]}"#)
            #expect(r.status == 502 && r.errorCode == 1401, "\(r.text)")
            #expect(r.text.contains("vault.max_batch"))
            #expect(!r.text.contains("4111111111111111"))
            // At the limit it passes, redacted.
            let hundred = (0..<100).map { _ in #"{"pan":"4111111111111111"}"# }.joined(separator: ",")
            let ok = try server.client().request("POST", "/proxy/orders", json: #"{"items":[\#(hundred)]}"#)
            #expect(ok.status == 200, "\(ok.text)")
            #expect(!ok.text.contains("4111111111111111"))
        }
    }

    /// An upstream that cannot be reached is Cloak's own 502 1400, not an answer: the answer's
    /// operations never run on it (here they would have aliased the error's description).
    @Test func anUnreachableUpstreamIsAnErrorNotAnAnswerToTransform() throws {
        try Self.withServer { server, _ in
            let r = try server.client().request("POST", "/proxy/dead", json: #"{"x":1}"#)
            #expect(r.status == 502 && r.errorCode == 1400, "\(r.text)")
            #expect(!r.text.contains("tok_"), "\(r.text)")
        }
    }

    @Test func anUpstreamAnswerThatDoesNotParseIs502AndNothingOfItPasses() throws {
        try Self.withServer { server, upstream in
            // The upstream echoes this broken JSON with a JSON content type.
            let r = try server.client().request("POST", "/proxy/orders", json: #"{"pan":"4111111111111111""#)
            #expect(r.status == 502 && r.errorCode == 1401, "\(r.text)")
            #expect(!r.text.contains("4111111111111111"))
        }
    }

    @Test func revealOnAnInboundRouteNeedsATokenWithAliasesReveal() throws {
        try Self.withServer { server, upstream in
            let created = try server.client().request(
                "POST", "/aliases", json: #"{"data":[{"value":"4111111111111111","format":"UUID"}]}"#,
                headers: [("Authorization", "Bearer \(TestServer.fullToken)")])
            let alias = try #require(
                ((created.json?["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]])?.first?["alias"]
                    as? String)
            let anonymous = try server.client().request("POST", "/proxy/payouts", json: #"{"card":"\#(alias)"}"#)
            #expect(anonymous.status == 401 && anonymous.errorCode == 1300)
            let creator = try server.client().request(
                "POST", "/proxy/payouts", json: #"{"card":"\#(alias)"}"#,
                headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
            #expect(creator.status == 403 && creator.errorCode == 1301)
            #expect(upstream.received.isEmpty)
            let revealer = try server.client().request(
                "POST", "/proxy/payouts", json: #"{"card":"\#(alias)"}"#,
                headers: [("Authorization", "Bearer \(TestServer.revealOnlyToken)")])
            #expect(revealer.status == 200, "\(revealer.text)")
            #expect(upstream.received.last?.body == #"{"card":"4111111111111111"}"#)
            #expect(!server.logs.text.contains("4111111111111111"))
        }
    }
}
