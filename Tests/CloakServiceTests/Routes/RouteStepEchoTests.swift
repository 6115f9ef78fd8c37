import CloakCore
import CloakCrypto
import CloakHTTP
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// What a step writes over revealed values is held for the answer's check: a digest, a MAC or a
/// signature lets a card be tested offline against guesses, a JWS payload is the body itself.
@Suite(.tags(.racy))
struct RouteStepEchoTests {
    static func message() -> OutgoingMessage {
        OutgoingMessage(
            method: "POST", scheme: .https, host: "psp.example", port: 443, target: "/v1/pay",
            headers: [("Content-Type", "application/json")], body: Array(#"{"card":"4111111111111111"}"#.utf8))
    }

    /// A card's body (whose base64 has `+` and `/`) after a digest step and an HMAC step, and
    /// the two values they computed over it.
    static func digestedAndMACed() throws -> (OutgoingMessage, [[UInt8]]) {
        var message = Self.message()
        message.body = Array(#"{"card":"4111111111111111","pad":"?>?>?>"}"#.utf8)
        let key = HMACKey(SymmetricKey(Array(repeating: 7, count: 32)))
        try Route.Step.apply(
            [
                .digest(.contentDigest),
                .hmacHeader(.init(key: key, header: "X-Mac", encoding: .hex, parts: [.body])),
            ], to: &message)
        return (message, [Digest.sha256(message.body), key.authenticate(message.body)])
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
        let written = message.written.exact.map { String(decoding: $0, as: UTF8.self) }
        #expect(written.contains(digest) && written.contains(mac) && written.contains(String(payload)))

        // An upstream echoing a request header, or the signed body, is caught; a plain answer is
        // not. The exchange looks for them as it looks for the revealed values.
        let echoHeader = HTTPResponse(status: 200, headers: [("X-Request-Digest", digest)], body: [])
        let echoBody = HTTPResponse(status: 200, headers: [], body: Array("you sent \(payload)".utf8))
        let plain = HTTPResponse(status: 200, headers: [("Content-Type", "application/jose")], body: Array("ok".utf8))
        #expect(Self.answer(echoHeader, written: message.written) == "finish 502 r1 d0 u200")
        #expect(Self.answer(echoBody, written: message.written) == "finish 502 r1 d0 u200")
        #expect(Self.answer(plain, written: message.written) == "finish 200 r1 d0 u200")
    }

    /// Issue 55, item 3: an upstream that echoed the bare SHA-256 of the body (a "digest
    /// mismatch" error does) let a caller with only `egress:<route>` recover the card from
    /// guesses over its BIN and last four. Every encoding of what a step derived is held.
    @Test(arguments: ["base64", "base64url", "hex", "HEX", "percent", "labelled", "json", "raw"])
    func aDerivedValueIsFoundInEveryEncoding(encoding: String) throws {
        let (message, computed) = try Self.digestedAndMACed()
        for raw in computed {
            let base64 = Base64.encode(raw)
            let echoed: [UInt8] =
                switch encoding {
                case "base64": Array(base64.utf8)
                case "base64url": Array(Base64.encodeURL(raw).utf8)
                case "hex": Array(Hex.string(raw).utf8)
                case "HEX": Array(Hex.string(raw).uppercased().utf8)
                case "percent": Array(OAuth1Signature.encode(base64).utf8)
                case "labelled": Array("expected sha-256=:\(base64):".utf8)
                case "json": Array(base64.replacingOccurrences(of: "/", with: "\\/").utf8)
                default: raw
                }
            let answer = HTTPResponse(
                status: 400, headers: [], body: Array("digest mismatch: ".utf8) + echoed + Array(" given".utf8))
            #expect(Self.answer(answer, written: message.written) == "finish 502 r1 d0 u400", "\(encoding)")
            let inHeader = HTTPResponse(
                status: 400, headers: [("X-Got", String(decoding: echoed, as: UTF8.self))], body: [])
            if encoding != "raw" {
                #expect(Self.answer(inHeader, written: message.written) == "finish 502 r1 d0 u400", "\(encoding)")
            }
        }
    }

    /// Review V, item 9: an upstream echoing 16 base64 or 20 hex characters of the body's
    /// SHA-256 confirmed a card offline (11,112 guesses, 1.56 s). Any run of ten characters of
    /// any form of a value a step computed, from anywhere in it, is refused; nine are not looked
    /// for (the residual, docs/threat-model.md), nor is a text that only looks alike.
    @Test(arguments: ["base64", "base64url", "hex", "HEX", "base32", "base32lower"])
    func aRunOfTenCharactersOfAComputedValueIsRefused(form: String) throws {
        let (message, computed) = try Self.digestedAndMACed()
        for raw in computed {
            let text: String =
                switch form {
                case "base64": Base64.encode(raw)
                case "base64url": Base64.encodeURL(raw)
                case "hex": Hex.string(raw)
                case "HEX": Hex.string(raw).uppercased()
                case "base32": String(decoding: EncodedRuns.base32(raw), as: UTF8.self)
                default: String(decoding: EncodedRuns.base32(raw), as: UTF8.self).lowercased()
                }
            let characters = Array(text.prefix { $0 != "=" })
            for (start, length) in [(0, 16), (0, 20), (0, 10), (5, 10), (characters.count - 10, 10), (3, 12)] {
                let run = String(characters[start..<start + length])
                let body = HTTPResponse(
                    status: 400, headers: [], body: Array(#"{"error":"digest mismatch, got \#(run)…"}"#.utf8))
                #expect(Self.answer(body, written: message.written) == "finish 502 r1 d0 u400", "\(form) \(run)")
                let header = HTTPResponse(status: 400, headers: [("X-Got", run)], body: [])
                #expect(Self.answer(header, written: message.written) == "finish 502 r1 d0 u400", "\(form) \(run)")
                let name = HTTPResponse(status: 400, headers: [("X-" + run, "1")], body: [])
                #expect(Self.answer(name, written: message.written) == "finish 502 r1 d0 u400", "\(form) \(run)")
            }
            // Ten cut by a character no form has pass, and so do nine (in base64, nine between
            // a `+` or `/` and another are a whole run of the older needles, issue 55's).
            let nine = String(characters[0..<9])
            let cut = String(characters[0..<5]) + "." + String(characters[5..<10])
            for text in form.hasPrefix("base64") ? [cut] : [nine, cut] {
                let answer = HTTPResponse(status: 400, headers: [], body: Array("got \(text)".utf8))
                #expect(Self.answer(answer, written: message.written) == "finish 400 r1 d0 u400", "\(form) \(text)")
            }
        }
    }

    /// The runs of unrelated text (a long JSON answer of words and ids) are not taken for a
    /// computed value's.
    @Test func anAnswerWithoutTheValueIsNotTakenForIt() {
        var runs = EncodedRuns()
        runs.add(Digest.sha256(Array("4111111111111111".utf8)))
        var text = ""
        for i in 0..<5_000 { text += #"{"id":"ord_\#(i)abcdefghijklmnop","status":"authorized_\#(i * 7919)"}"# }
        #expect(!runs.appear(in: HTTPResponse(status: 200, headers: [], body: Array(text.utf8))))
        #expect(EncodedRuns.base32(Array("foobar".utf8)) == Array("MZXW6YTBOI".utf8))  // RFC 4648's vector
    }

    /// The needles for a derived value, whatever its base64 looks like: no escapable character
    /// (one needle for base64 and base64url), runs between them, or none long enough (a value
    /// whose base64 is all `+`: the whole forms). Every form of it is found, and an answer
    /// without it is not.
    @Test(arguments: [
        ("no escapes", [UInt8](repeating: 0, count: 32)),
        ("runs", Digest.sha256(Array("4111111111111111".utf8))),
        ("only escapes", [UInt8]([0xFB, 0xEF, 0xBE, 0xFB, 0xEF, 0xBE, 0xFB, 0xEF, 0xBE, 0xFB, 0xEF, 0xBE])),
    ])
    func everyFormOfADerivedValueIsFound(_ shape: String, raw: [UInt8]) {
        var revealed = RevealedValues()
        for form in RevealedValues.encodings(of: raw) { revealed.add(bytes: form) }
        let base64 = Base64.encode(raw)
        let hex = Hex.string(raw)
        let echoes = [
            base64, String(base64.reversed().drop { $0 == "=" }.reversed()), Base64.encodeURL(raw), hex,
            hex.uppercased(), OAuth1Signature.encode(base64),
            OAuth1Signature.encode(base64).replacingOccurrences(of: "%2B", with: "%2b")
                .replacingOccurrences(of: "%2F", with: "%2f"),
            base64.replacingOccurrences(of: "/", with: "\\/"), #"sha-256=:\#(base64):"#,
        ]
        for echo in echoes {
            let answer = HTTPResponse(status: 400, headers: [], body: Array("{\"got\":\"\(echo)\"}".utf8))
            #expect(revealed.appear(in: answer), "\(shape): \(echo)")
        }
        #expect(!revealed.appear(in: HTTPResponse(status: 200, headers: [], body: Array(#"{"ok":true}"#.utf8))))
    }

    /// An exchange revealing one card for a caller who may not see it, answered with `answer`
    /// after steps wrote `written`.
    static func answer(_ answer: HTTPResponse, written: StepWrites) -> String {
        var (exchange, _) = RouteExchangeTests.revealed(
            "4111111111111111", plan: RouteExchangeTests.plan(request: RouteExchangeTests.revealCard))
        return RouteExchangeTests.name(exchange.event(.answered(.success(answer), written: written)))
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

/// What the caller sends that a step cannot run on: refused with 400 naming the step, nothing
/// sent (the doors' tests check the "nothing sent"; here, the answers).
struct RouteStepRefusalTests {
    static let rsaPublic = try! AsymmetricKey.read(file: StepKeys.shared.publicKey("rsa"))

    static func refusal(_ step: Route.Step, body: String) -> CloakError? {
        var message = RouteStepEchoTests.message()
        message.body = Array(body.utf8)
        do throws(CloakError) {
            try Route.Step.apply([step], to: &message, firstIndex: 2)
            return nil
        } catch {
            return error
        }
    }

    @Test func aJWEOverJSONValuesRefusesABodyThatIsNotJSONOrHoldsTooMany() throws {
        let step = Route.Step.jwe(.init(key: Self.rsaPublic, keyID: nil, json: [try JSONPath("$.cards[*]")]))
        let notJSON = try #require(Self.refusal(step, body: "card=4111111111111111"))
        #expect(notJSON.code == .malformedRequest)
        #expect(notJSON.message.hasPrefix("the route's request[2] (jwe): "), "\(notJSON.message)")
        #expect(!notJSON.message.contains("4111111111111111"))
        let many = "{\"cards\":[" + Array(repeating: "\"4111111111111111\"", count: 101).joined(separator: ",") + "]}"
        let tooMany = try #require(Self.refusal(step, body: many))
        #expect(tooMany.code == .malformedRequest && tooMany.message.contains("at most 100"), "\(tooMany.message)")
        let hundred =
            "{\"cards\":[" + Array(repeating: "\"4111111111111111\"", count: 100).joined(separator: ",") + "]}"
        #expect(Self.refusal(step, body: hundred) == nil)
    }

    @Test func anHMACHeaderOverAHeaderTheRequestLacksIsRefused() throws {
        let step = Route.Step.hmacHeader(
            .init(
                key: HMACKey(SymmetricKey(Array(repeating: 3, count: 32))), header: "X-Mac", encoding: .base64,
                parts: [.method, .header("x-merchant-id")]))
        let missing = try #require(Self.refusal(step, body: "{}"))
        #expect(missing.code == .malformedRequest && missing.message.contains("x-merchant-id"), "\(missing.message)")
    }
}
