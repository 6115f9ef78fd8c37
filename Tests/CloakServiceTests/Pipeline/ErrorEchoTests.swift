import CloakTesting
import Foundation
import Testing

/// Issue 34, defect 8: an error body never echoes a path segment the caller chose (a card
/// number typed where a route id or a form name goes would come back in the answer, and from
/// there into whatever logs the caller keeps).
@Suite(.serialized, .tags(.sockets)) struct ErrorEchoTests {
    static let card = "4000056655665556"

    @Test func theEgressDoorNamesNoUnknownRoute() throws {
        // egress:* may use any route, so the lookup itself answers: 404.
        let f = try EgressServiceFixture(scopes: "\"egress:*\"")
        defer { f.stop() }
        let auth = [("Proxy-Authorization", f.basicCredentials)]
        let unknown = try f.server.client().request("POST", "/egress/\(Self.card)/v1/x", json: "{}", headers: auth)
        #expect(unknown.status == 404 && unknown.errorCode == 1404, "\(unknown.text)")
        #expect(!unknown.text.contains(Self.card) && !unknown.text.contains("556"), "\(unknown.text)")
        // A token without the route's scope: 403, and the id is not named either.
        let narrow = try EgressServiceFixture()
        defer { narrow.stop() }
        let refused = try narrow.server.client().request(
            "POST", "/egress/\(Self.card)/v1/x", json: "{}", headers: [("Proxy-Authorization", narrow.basicCredentials)]
        )
        #expect(refused.status == 403 && !refused.text.contains(Self.card), "\(refused.text)")
    }

    @Test(arguments: ["/forms/\(card)/validate", "/forms/\(card)/tokens", "/elements/v1/forms/\(card)"])
    func unknownFormsAreNotNamed(path: String) throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                path.hasPrefix("/elements") ? "GET" : "POST", path, json: "{\"fields\":{}}")
            #expect(r.status == 404 && r.errorCode == 1404, "\(r.text)")
            #expect(!r.text.contains(Self.card) && !r.text.contains("556"), "\(r.text)")
        }
    }
}
