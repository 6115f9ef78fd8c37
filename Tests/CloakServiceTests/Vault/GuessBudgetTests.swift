import CloakTesting
import Foundation
import Testing

/// Review V, item 1: the node's budget for guess counting (`limits.guess_memory_mib`) is shared
/// by every token, so whatever a request counts is charged to the token that presented it. A
/// token that may only pay through an egress route whose answers are redacted had its answers'
/// cards counted with no rate, no cap and no budget: 903 requests of 100 cards filled an 8 MiB
/// budget and every other token's new card got 429 for up to an hour. Now each value of an
/// answer is a unit of the presenting token's rate, and past it (or its cap, or the budget) the
/// answer is refused closed: 502, nothing of it sent.
@Suite(.serialized, .tags(.racy, .sockets))
struct GuessBudgetTests {
    /// A route whose answers' card numbers are redacted, an egress token limited to 600 requests
    /// a minute (a burst of 600), and a budget of 1 MiB (8,192 values).
    static func fixture() throws -> (TestCertificates, TLSUpstream, TestService) {
        let routes = """
                - id: cards
                  upstream: "https://127.0.0.1:PORT"
                  paths: ["/v1/*"]
                  methods: [POST]
                  response:
                    - {redact: {json: ["$..number"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                  ca_file: "CA"
                  allow_private: true
                  max_aliases: 100
            """
        let certificates = try TestCertificates()
        let upstream = try TLSUpstream(certificates: certificates, requireClientCertificate: false)
        let yaml = EgressFixture.yaml(
            upstream: upstream, certificates: certificates, clientCertificate: false, extraRoutes: routes,
            scopes: "\"egress:cards\""
        )
        .replacingOccurrences(of: "  guess_memory_mib: 512", with: "  guess_memory_mib: 1")
        .replacingOccurrences(
            of: "scopes: [\"egress:cards\"]}", with: "scopes: [\"egress:cards\"], requests_per_minute: 600}")
        #expect(yaml.contains("guess_memory_mib: 1 ") && yaml.contains("requests_per_minute: 600}"))
        return (certificates, upstream, try TestService(yaml: yaml))
    }

    @Test func anEgressTokensAnswersCannotSpendTheBudgetOfOtherTokens() throws {
        let (certificates, upstream, server) = try Self.fixture()
        defer {
            server.stop()
            upstream.stop()
            certificates.remove()
        }
        var answered = 0
        var refusal: RawHTTPClient.Response?
        let started = Date()
        // 100 requests of 100 distinct cards each: 10,000 values, past the 8,192 the budget holds.
        for request in 0..<100 {
            let cards = MultiNodeTests.cards(100, seed: 300 + request)
            let body = #"{"cards":[\#(cards.map { #"{"number":"\#($0)"}"# }.joined(separator: ","))]}"#
            let r = try server.client().request(
                "POST", "/egress/cards/v1/echo", json: body,
                headers: [("Proxy-Authorization", EgressFixture.egressBasicCredentials)])
            if r.status == 200 {
                answered += 1
                #expect(!r.text.contains(cards[0]))
                continue
            }
            refusal = r
            break
        }
        // Refused once the token's rate is spent (a burst of 600 units, a unit the request
        // and one each value of its answer): at the door (429) or, closed, at the answer (502,
        // nothing of it sent). Before, all 100 were answered and their 10,000 values counted.
        let refused = try #require(refusal, "every answer went through (\(answered))")
        // At most the burst, what the rate gave back meanwhile (10 a second, however slow the
        // machine), and the one request that went into debt.
        let refilled = Int(Date().timeIntervalSince(started) * 10) + 10
        #expect(answered * 101 <= 600 + refilled + 101, "\(answered) answers")
        #expect(answered < 100)
        #expect(
            (refused.status == 502 && refused.errorCode == 1401 && refused.text.contains("rate"))
                || (refused.status == 429 && refused.errorCode == 1429), "\(refused.status) \(refused.text)")
        #expect(!refused.text.contains("411111"), "\(refused.text)")
        // Another token's new card is not refused for the budget.
        let other = try server.client().request(
            "POST", "/aliases",
            json: #"{"data":[{"value":"\#(MultiNodeTests.cards(1, seed: 999)[0])","format":"FPE_SIX_T_FOUR"}]}"#,
            headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
        #expect(other.status == 201, "\(other.status) \(other.text)")
    }
}
