import CloakTesting
import Foundation
import Testing

/// Issue 22: "is this card already in the vault, under which alias?" without creating one.
@Suite(.serialized, .tags(.sockets)) struct LookupTests {
    @Test func aKeptValueIsFoundWithoutItsValueAndNothingElseIs() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let card = "4111111111111111"
            let kept = try client.request(
                "POST", "/aliases", json: IntentTests.body(card),
                headers: IntentTests.bearer(TestServer.createOnlyToken))
            let alias = try #require(IntentTests.alias(kept))
            // An anonymous intent of another card, and a VOLATILE value: neither is found.
            _ = try client.request("POST", "/tokens", json: IntentTests.body("5555555555554444"))
            _ = try client.request(
                "POST", "/aliases", json: IntentTests.body("321", format: "UUID", storage: "VOLATILE"),
                headers: IntentTests.bearer(TestServer.createOnlyToken))
            let body =
                #"{"data":[{"value":"\#(card)"},{"value":"5555555555554444"},{"value":"321"},{"value":"6011111111111117"}]}"#
            let r = try client.request(
                "POST", "/aliases/lookup", json: body, headers: IntentTests.bearer(TestServer.lookupOnlyToken))
            #expect(r.status == 200, "\(r.text)")
            let data = try #require(r.json?["data"] as? [Any], "\(r.text)")
            #expect(data.count == 4)
            let found = try #require(data[0] as? [String: Any])
            #expect(((found["aliases"] as? [[String: Any]])?.first?["alias"] as? String) == alias)
            #expect(
                found["storage"] as? String == "PERSISTENT" && found["value"] == nil && found["expires_at"] is NSNull)
            #expect(data[1] is NSNull && data[2] is NSNull && data[3] is NSNull)
            #expect(!r.text.contains(card))
            // Audited like a reveal; nothing was created.
            #expect(server.logs.lines.filter { $0.contains(#""action":"lookup""#) }.count == 4)
            let again = try client.request(
                "POST", "/aliases/lookup", json: #"{"data":[{"value":"6011111111111117"}]}"#,
                headers: IntentTests.bearer(TestServer.fullToken))
            #expect((again.json?["data"] as? [Any])?.first is NSNull)
        }
    }

    @Test func lookupNeedsAliasesLookupAndAWellFormedBody() throws {
        try withTestServer(TestService()) { server throws in
            let body = #"{"data":[{"value":"4111111111111111"}]}"#
            #expect(try server.client().request("POST", "/aliases/lookup", json: body).status == 401)
            // aliases:reveal no longer looks values up (issue 34): lookup has its own scope.
            for token in [TestServer.createOnlyToken, TestServer.revealOnlyToken] {
                let r = try server.client().request(
                    "POST", "/aliases/lookup", json: body, headers: IntentTests.bearer(token))
                #expect(r.status == 403 && r.errorCode == 1301, "\(r.text)")
            }
            for bad in [
                #"{"data":[]}"#, #"{"data":[{"value":""}]}"#, #"{"data":[{"value":1}]}"#,
                #"{"data":[{"value":"a","x":1}]}"#, "{}",
            ] {
                let r = try server.client().request(
                    "POST", "/aliases/lookup", json: bad, headers: IntentTests.bearer(TestServer.fullToken))
                #expect(r.status == 400 && r.errorCode == 1002, "\(bad): \(r.text)")
            }
        }
    }
}
