import CloakTesting
import Foundation
import Testing

/// What an egress caller gets back when the provider's answer holds what was revealed to it, a
/// real HTTPS upstream echoing its request: a caller who may only pay (`egress:<route>`) never
/// sees the card, whatever type or encoding the answer claims; a caller with `aliases:reveal`
/// may. The provider has acted by then, so a refused answer is 502 1401 naming its status.
@Suite(.serialized, .tags(.sockets)) struct EgressAnswerTests {
    /// A route that reveals `$.card` and has no response operations.
    static let raw = """
            - id: raw
              upstream: "https://127.0.0.1:PORT"
              request:
                - {reveal: {json: ["$.card"]}}
              ca_file: "CA"
              allow_private: true
        """

    static func post(
        _ f: EgressServiceFixture, _ route: String, _ alias: String, _ headers: [(String, String)] = []
    ) throws -> RawHTTPClient.Response {
        try f.server.client().request(
            "POST", "/egress/\(route)/v1/charges", json: #"{"card":"\#(alias)","amount":1000}"#,
            headers: [("Proxy-Authorization", f.basicCredentials)] + headers)
    }

    @Test(arguments: ["text/plain", "application/json", "text/html"])
    func anEchoOfTheRevealedCardNeverReachesACallerWhoMayOnlyPay(type: String) throws {
        let f = try EgressServiceFixture(extraRoutes: Self.raw, scopes: "\"egress:*\"")
        defer { f.stop() }
        let alias = try f.alias()
        let r = try Self.post(f, "raw", alias, [("X-Echo-Content-Type", type)])
        #expect(r.status == 502 && r.errorCode == 1401, "\(type): \(r.status) \(r.text)")
        #expect(r.text.contains("the upstream answered 200"), "\(r.text)")
        // Issue 57: the provider's status is a field, not only prose.
        let info = (r.json?["error"] as? [String: Any])?["extraInfo"] as? [String: Any]
        #expect(info?["upstreamStatus"] as? Int == 200, "\(r.text)")
        #expect(!r.text.contains(EgressFixture.card))
        // The provider did get it: the payment may have gone through, which the 502 says.
        #expect(f.upstream.received.last?.body.contains(EgressFixture.card) == true)
        #expect(!f.server.logs.text.contains(EgressFixture.card))
    }

    @Test func aRouteWithResponseOperationsRefusesAnAnswerOfAnotherType() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let alias = try f.alias()
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/tokens", json: #"{"source":{"number":"\#(alias)"}}"#,
            headers: [("Proxy-Authorization", f.basicCredentials), ("X-Echo-Content-Type", "text/plain")])
        #expect(r.status == 502 && r.errorCode == 1401, "\(r.status) \(r.text)")
        #expect(!r.text.contains(EgressFixture.card))
    }

    @Test func answersAreAskedForUnencodedAndAnEncodedOneIsNotPassedOn() throws {
        let f = try EgressServiceFixture(extraRoutes: Self.raw, scopes: "\"egress:*\"")
        defer { f.stop() }
        let alias = try f.alias()
        // Accept-Encoding as Python's requests sends it by default: the provider is asked for identity.
        let r = try Self.post(f, "raw", alias, [("Accept-Encoding", "gzip, deflate")])
        #expect(r.status == 502)  // the echo holds the card
        #expect(f.upstream.received.last?.header("Accept-Encoding") == "identity")
        let gzipped = try Self.post(f, "raw", alias, [("X-Echo-Gzip", "1")])
        #expect(gzipped.status == 502 && gzipped.errorCode == 1401, "\(gzipped.status) \(gzipped.text)")
        #expect(gzipped.text.contains("encoded"), "\(gzipped.text)")
    }

    @Test func aCallerWhoMayRevealGetsTheEcho() throws {
        let f = try EgressServiceFixture(extraRoutes: Self.raw, scopes: "\"egress:*\", \"aliases:reveal\"")
        defer { f.stop() }
        let alias = try f.alias()
        let r = try Self.post(f, "raw", alias, [("X-Echo-Content-Type", "text/plain")])
        #expect(r.status == 200 && r.text.contains(EgressFixture.card), "\(r.status) \(r.text)")
    }
}
