import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// `PUT /aliases/{alias}` needs `aliases:update` and tells a caller without it nothing (review
/// defect 5): in process and over a socket alike.
@Suite(.tags(.sockets)) struct UpdateScopeTests {
    @Test(arguments: TestMode.allCases) func updatingNeedsAliasesUpdateAndTellsNothingWithoutIt(mode: TestMode) throws {
        try withTestService(mode) { server throws in
            let client = try server.testClient()
            let created = try client.request(
                "POST", "/aliases", json: TestCards.body(["4111111111111111"], format: "UUID"),
                headers: TestCards.bearer(TestServer.createOnlyToken))
            let alias = try #require(TestCards.aliases(created).first)
            let body = #"{"data":{"classifiers":["x"]}}"#
            // A creator: 403 for an alias that exists and for one that does not alike.
            let known = try client.request(
                "PUT", "/aliases/\(alias)", json: body, headers: TestCards.bearer(TestServer.createOnlyToken))
            let unknown = try client.request(
                "PUT", "/aliases/tok_sandbox_nope", json: body, headers: TestCards.bearer(TestServer.createOnlyToken))
            #expect(known.status == 403 && known.errorCode == 1301)
            #expect(known.text == unknown.text)
            // With aliases:update: 204 or one 404 for whatever is not found, each audited.
            let full = TestCards.bearer(TestServer.fullToken)
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
}
