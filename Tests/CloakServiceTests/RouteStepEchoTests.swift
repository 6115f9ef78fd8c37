import CloakCore
import CloakCrypto
import CloakHTTP
import Testing

@testable import CloakService

/// What a step writes over revealed values is held for the answer's check: a digest, a MAC or a
/// signature lets a card be tested offline against guesses, a JWS payload is the body itself.
struct RouteStepEchoTests {
    static func message() -> OutgoingMessage {
        OutgoingMessage(
            method: "POST", scheme: .https, host: "psp.example", port: 443, target: "/v1/pay",
            headers: [("Content-Type", "application/json")], body: Array(#"{"card":"4111111111111111"}"#.utf8))
    }

    @Test func digestsMACsAndJWSPayloadsAreHeldAndFoundInAnEcho() throws {
        let rsa = try AsymmetricKey.read(file: StepKeys.shared.privateKey("rsa"))
        var message = Self.message()
        try Route.Step.apply(
            [
                .digest(.contentDigest),
                .hmacHeader(
                    .init(
                        key: HMACKey(SymmetricKey(Array(repeating: 7, count: 32))), header: "X-Mac", encoding: .hex,
                        parts: [.body])),
                .jws(.init(algorithm: .rs256, key: .privateKey(rsa), keyID: nil)),
            ], to: &message)
        let digest = try #require(message.headers.first { $0.name == "Content-Digest" }?.value)
        let mac = try #require(message.headers.first { $0.name == "X-Mac" }?.value)
        let payload = String(decoding: message.body, as: UTF8.self).split(separator: ".")[1]
        #expect(message.written.map { String(decoding: $0, as: UTF8.self) } == [digest, mac, String(payload)])

        // An upstream echoing a request header, or the signed body, is caught; a plain answer is not.
        let echoHeader = HTTPResponse(status: 200, headers: [("X-Request-Digest", digest)], body: [])
        let echoBody = HTTPResponse(status: 200, headers: [], body: Array("you sent \(payload)".utf8))
        let plain = HTTPResponse(status: 200, headers: [("Content-Type", "application/jose")], body: Array("ok".utf8))
        #expect(RouteStepRun.echoes(echoHeader, message.written))
        #expect(RouteStepRun.echoes(echoBody, message.written))
        #expect(!RouteStepRun.echoes(plain, message.written))
    }

    @Test func onlySlowStepsLeaveTheLoop() throws {
        let rsa = try AsymmetricKey.read(file: StepKeys.shared.privateKey("rsa"))
        let secret = StepKey.secret(HMACKey(SymmetricKey(Array(repeating: 1, count: 32))))
        #expect(!Route.Step.digest(.digest).holdsThread)
        #expect(
            !Route.Step.httpSignature(
                .init(algorithm: .hmacSHA256, key: secret, keyID: "k", components: ["@method"], nonce: false)
            ).holdsThread)
        #expect(
            Route.Step.httpSignature(
                .init(
                    algorithm: .rsaPKCS1SHA256, key: .privateKey(rsa), keyID: "k", components: ["@method"], nonce: false
                )
            ).holdsThread)
        #expect(Route.Step.jws(.init(algorithm: .ps256, key: .privateKey(rsa), keyID: nil)).holdsThread)
    }
}
