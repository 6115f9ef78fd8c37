import CloakCrypto
import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// A Cloak token in `Authorization` never reaches an upstream (review defect 4): the transform
/// door refuses it, whatever the header's scheme and spelling, and a tunnel never carries it.
@Suite(.serialized, .tags(.sockets)) struct CallerTokenForwardingTests {
    @Test func aCloakTokenInAuthorizationIsNeverForwardedByTheTransformDoor() throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"),
                ("Authorization", "Bearer \(TestServer.fullToken)"),
            ])
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
        #expect(!r.text.contains(TestServer.fullToken))
        // The provider's own key still goes through.
        let ok = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"), ("Authorization", "Bearer sk_test_psp"),
            ])
        #expect(ok.status == 200)
        #expect(f.upstream.received.last?.header("Authorization") == "Bearer sk_test_psp")
    }

    @Test(arguments: [
        "Basic " + Data("backend:\(TestServer.fullToken)".utf8).base64EncodedString(),
        "Bearer \(TestServer.fullToken)", TestServer.fullToken,
    ])
    func everyAuthorizationHeaderAndSchemeIsChecked(value: String) throws {
        let f = try EgressServiceFixture()
        defer { f.stop() }
        let r = try f.server.client().request(
            "POST", "/egress/psp/v1/charges", json: #"{"amount":1}"#,
            headers: [
                ("Proxy-Authorization", "Bearer \(EgressFixture.egressToken)"), ("Authorization", "Bearer sk_test_psp"),
                ("Authorization", value),
            ])
        #expect(r.status == 400 && r.errorCode == 1002, "\(r.text)")
        #expect(f.upstream.received.isEmpty)
    }

    @Test func aCloakTokenInAuthorizationIsNeverForwardedThroughATunnel() throws {
        let f = try EgressFixture()
        defer { f.stop() }
        let r = try EgressFixture.run(
            "curl",
            [
                "-sS", "--proxy", "http://127.0.0.1:\(f.egressPort)", "--proxy-user",
                "egress:\(EgressFixture.egressToken)",
                "--cacert", f.server.egressCAFile, "https://127.0.0.1:\(f.upstream.port)/v1/charges",
                "-H", "Authorization: Bearer \(TestServer.fullToken)", "-d", "amount=1",
            ])
        #expect(r.out.contains("1002"), "\(r.out) \(r.err)")
        #expect(f.upstream.received.isEmpty)
    }
}
