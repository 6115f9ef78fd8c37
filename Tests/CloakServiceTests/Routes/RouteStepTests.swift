import CloakCore
import CloakService
import CloakTesting
import Foundation
import Testing

/// Keys for the route-step tests, made once per test process by `openssl` (a PEM private key
/// of each kind, mode 0600, and its public half), and HMAC secrets passed by environment.
final class StepKeys: Sendable {
    let directory = TemporaryDirectory()
    static let shared: StepKeys = {
        do { return try StepKeys() } catch { fatalError("cannot make the step keys: \(error)") }
    }()
    /// 32 bytes, base64, as CyberSource hands out shared secrets.
    static let secretBase64 = "c2VjcmV0LWZvci10aGUtcm91dGUtc3RlcC10ZXN0cyE="
    static let environment = ["STEP_SECRET": "base64:" + secretBase64]

    private init() throws {
        for (name, options) in [
            ("rsa", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
            ("ec", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
            ("ed25519", ["-algorithm", "ED25519"]),
            ("rsa1024", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]),
        ] {
            let r1 = try EgressFixture.run("openssl", ["genpkey"] + options + ["-out", privateKey(name)])
            let r2 = try EgressFixture.run(
                "openssl", ["pkey", "-in", privateKey(name), "-pubout", "-out", publicKey(name)])
            guard r1.status == 0, r2.status == 0 else { throw CocoaError(.fileWriteUnknown) }
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: privateKey(name))
        }
    }

    func privateKey(_ name: String) -> String { "\(directory.path)/\(name).key" }
    func publicKey(_ name: String) -> String { "\(directory.path)/\(name).pub" }
    func publicPEM(_ name: String) throws -> String { try String(contentsOfFile: publicKey(name), encoding: .utf8) }
}

/// Issue 49: every step, live through the egress door to the Python upstream, checked there by
/// an independent implementation (``RouteStepVerifier``).
@Suite(
    .enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (scripts/test-python)"),
    .tags(.racy, .python, .sockets))
struct RouteStepTests {
    static let keys = StepKeys.shared

    /// A fixture with one route `signed` whose request list is `steps` after a reveal of `$.card`.
    static func fixture(_ steps: String, response: String = "") throws -> EgressServiceFixture {
        let request =
            steps.isEmpty
            ? ""
            : """
                  request:
                    - {reveal: {json: ["$.card"]}}
            \(steps)
            """
        let route = """
                - id: signed
                  upstream: "https://127.0.0.1:PORT"
                  paths: ["/v1/*"]
                  methods: [POST]
            \(request)
            \(response)
                  ca_file: "CA"
                  allow_private: true
            """
        return try EgressServiceFixture(
            extraRoutes: route, scopes: #""egress:signed""#, environment: StepKeys.environment)
    }

    /// Sends `{"card": alias, "amount": 100}` through the route; what the upstream received.
    static func send(
        _ f: EgressServiceFixture, path: String = "/v1/pay", headers: [(String, String)] = []
    ) throws -> (response: RawHTTPClient.Response, seen: TLSUpstream.Received?) {
        let alias = try f.alias()
        let before = f.upstream.received.count
        let r = try f.server.client().request(
            "POST", "/egress/signed" + path, json: #"{"card":"\#(alias)","amount":100}"#,
            headers: EgressFileRevealTests.proxy + headers)
        let received = f.upstream.received
        return (r, received.count > before ? received.last : nil)
    }

    static func url(_ f: EgressServiceFixture, _ seen: TLSUpstream.Received) -> String {
        "https://127.0.0.1:\(f.upstream.port)\(seen.path)"
    }

    @Test(arguments: [
        ("hmac-sha256", "env:STEP_SECRET"), ("rsa-pss-sha512", "file:rsa"), ("rsa-v1_5-sha256", "file:rsa"),
        ("ecdsa-p256-sha256", "file:ec"), ("ed25519", "file:ed25519"),
    ])
    func anRFC9421SignatureVerifies(algorithm: String, key: String) throws {
        let keyName = String(key.dropFirst(5))
        let keyText = key.hasPrefix("file:") ? "file:" + Self.keys.privateKey(keyName) : key
        let f = try Self.fixture(
            """
                    - {digest: {header: Content-Digest}}
                    - http_signature:
                        algorithm: \(algorithm)
                        key: "\(keyText)"
                        keyid: test-key-\(algorithm)
                        components: ["@method", "@target-uri", "@authority", "@path", "@query", "content-digest", "content-type", "content-length"]
                        nonce: true
            """)
        defer { f.stop() }
        let (_, seen) = try Self.send(f, path: "/v1/pay?capture=true&x=%2F")
        let request = try #require(seen)
        #expect(request.body.contains(EgressFixture.card))
        let verdict = try RouteStepVerifier.check(
            "rfc9421", request, url: Self.url(f, request),
            key: key.hasPrefix("env:") ? StepKeys.secretBase64 : try Self.keys.publicPEM(keyName),
            extra: ["algorithm": algorithm, "keyid": "test-key-\(algorithm)"])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(verdict["label"] as? String == "sig1")
        #expect((verdict["nonce"] as? String)?.count ?? 0 >= 16)
        #expect((verdict["covered"] as? [String])?.contains("\"content-digest\"") == true, "\(verdict)")
    }

    @Test func aFreshNonceAndCreatedEveryRequest() throws {
        let f = try Self.fixture(
            """
                    - http_signature: {algorithm: hmac-sha256, key: "env:STEP_SECRET", keyid: k, components: ["@method"], nonce: true}
            """)
        defer { f.stop() }
        let first = try #require(try Self.send(f).seen?.header("Signature-Input"))
        let second = try #require(try Self.send(f).seen?.header("Signature-Input"))
        #expect(first != second)
        #expect(first.hasPrefix("sig1=(\"@method\");created="))
    }

    @Test func aCyberSourceSignatureVerifiesAndDateIsAdded() throws {
        let f = try Self.fixture(
            """
                    - {digest: {header: Digest}}
                    - http_signature:
                        scheme: draft-cavage
                        algorithm: HmacSHA256
                        key: "env:STEP_SECRET"
                        keyid: 08c94330-f618-42a3-b09d-e1e43be5efda
                        components: [host, date, "(request-target)", digest, v-c-merchant-id]
            """)
        defer { f.stop() }
        let (_, seen) = try Self.send(f, path: "/v1/pts/v2/payments", headers: [("v-c-merchant-id", "testrest")])
        let request = try #require(seen)
        let verdict = try RouteStepVerifier.check(
            "cavage", request, url: Self.url(f, request), key: StepKeys.secretBase64,
            extra: ["keyid": "08c94330-f618-42a3-b09d-e1e43be5efda", "path": request.path])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(verdict["headers"] as? String == "host date (request-target) digest v-c-merchant-id")
        #expect((verdict["date"] as? String)?.hasSuffix(" GMT") == true)
    }

    @Test func aComponentTheRequestLacksIsRefusedAndNothingIsSent() throws {
        let f = try Self.fixture(
            """
                    - http_signature:
                        scheme: draft-cavage
                        key: "env:STEP_SECRET"
                        keyid: k
                        components: [host, "(request-target)", v-c-merchant-id]
            """)
        defer { f.stop() }
        let (r, seen) = try Self.send(f)
        #expect(r.status == 400)
        #expect(r.errorCode == 1002)
        #expect(r.text.contains("v-c-merchant-id"))
        #expect(!r.text.contains(EgressFixture.card))
        #expect(seen == nil)
    }

    @Test func aMastercardOAuthSignatureVerifies() throws {
        let f = try Self.fixture(
            """
                    - oauth1_body_hash: {consumer_key: "consumer-key!abc", key: "file:\(Self.keys.privateKey("rsa"))"}
            """)
        defer { f.stop() }
        let (_, seen) = try Self.send(f, path: "/v1/send?b=2&a=1+1&a=%7E")
        let request = try #require(seen)
        let verdict = try RouteStepVerifier.check(
            "oauth1", request, url: Self.url(f, request), key: try Self.keys.publicPEM("rsa"),
            extra: ["consumer_key": "consumer-key!abc"])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
    }

    @Test func aWholeBodyJWEDecryptsWithTheProvidersKey() throws {
        let f = try Self.fixture(
            """
                    - jwe: {key: "file:\(Self.keys.publicKey("rsa"))", kid: provider-2026}
            """)
        defer { f.stop() }
        let (r, seen) = try Self.send(f)
        let request = try #require(seen)
        #expect(!request.body.contains(EgressFixture.card))
        let verdict = try RouteStepVerifier.check(
            "jwe", request, url: Self.url(f, request),
            key: try String(contentsOfFile: Self.keys.privateKey("rsa"), encoding: .utf8))
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        let plaintext = try #require(verdict["plaintext"] as? String)
        #expect(plaintext == #"{"card":"\#(EgressFixture.card)","amount":100}"#)
        let header = verdict["header"] as? [String: Any]
        #expect(header?["alg"] as? String == "RSA-OAEP-256")
        #expect(header?["enc"] as? String == "A256GCM")
        #expect(header?["kid"] as? String == "provider-2026")
        // The echo is the sealed body: nothing of the card reaches the caller.
        #expect(r.status == 200)
        #expect(!r.text.contains(EgressFixture.card))
    }

    @Test func selectedValuesAreEachAJWEAndTheRestStays() throws {
        let f = try Self.fixture(
            """
                    - jwe: {key: "file:\(Self.keys.publicKey("rsa"))", json: ["$.card"]}
            """)
        defer { f.stop() }
        let (_, seen) = try Self.send(f)
        let request = try #require(seen)
        let verdict = try RouteStepVerifier.check(
            "jwe", request, url: Self.url(f, request),
            key: try String(contentsOfFile: Self.keys.privateKey("rsa"), encoding: .utf8), extra: ["json": ["card"]])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(verdict["values"] as? [String] == [EgressFixture.card])
        #expect((verdict["document"] as? [String: Any])?["amount"] as? Int == 100)
        #expect(request.header("Content-Type") == "application/json")
    }

    @Test(arguments: [("RS256", "rsa"), ("PS256", "rsa"), ("ES256", "ec")])
    func aJWSVerifies(algorithm: String, key: String) throws {
        let f = try Self.fixture(
            """
                    - jws: {algorithm: \(algorithm), key: "file:\(Self.keys.privateKey(key))", kid: merchant-1}
            """)
        defer { f.stop() }
        let (r, seen) = try Self.send(f)
        // The echo carries the card readably (a JWS payload is base64url): the caller, without
        // aliases:reveal, never gets it.
        #expect(r.status == 502 && r.errorCode == 1401, "\(r.text)")
        #expect(!r.text.contains(EgressFixture.card))
        let request = try #require(seen)
        let verdict = try RouteStepVerifier.check(
            "jws", request, url: Self.url(f, request), key: try Self.keys.publicPEM(key),
            extra: ["algorithm": algorithm])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(verdict["payload"] as? String == #"{"card":"\#(EgressFixture.card)","amount":100}"#)
        #expect((verdict["header"] as? [String: Any])?["kid"] as? String == "merchant-1")
    }

    @Test func anHMACHeaderCoversMethodPathAndBody() throws {
        let f = try Self.fixture(
            """
                    - hmac_header: {key: "env:STEP_SECRET", header: X-Signature, encoding: hex, parts: [method, path, body]}
            """)
        defer { f.stop() }
        let (_, seen) = try Self.send(f, path: "/v1/pay?q=1")
        let request = try #require(seen)
        let verdict = try RouteStepVerifier.check(
            "hmac_header", request, url: Self.url(f, request), key: StepKeys.secretBase64,
            extra: ["header": "X-Signature", "path": "/v1/pay"])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
    }

    /// An answer sealed by jwcrypto to Cloak's key is opened before the answer's redaction, so the
    /// card in it comes back as an alias.
    @Test func anAnswerSealedToCloakIsOpenedBeforeItsRedaction() throws {
        let f = try Self.fixture(
            "",
            response: """
                      response:
                        - jwe_decrypt: {key: "file:\(Self.keys.privateKey("rsa"))"}
                        - {redact: {json: ["$.number"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                """)
        defer { f.stop() }
        let sealed = try RouteStepVerifier.jwe(
            #"{"number":"\#(EgressFixture.card)","status":"ok"}"#, to: try Self.keys.publicPEM("rsa"))
        #expect(sealed.split(separator: ".").count == 5)
        // The upstream echoes what it gets: the sealed answer comes back as the provider's would.
        let r = try f.server.client().request(
            "POST", "/egress/signed/v1/pay", body: Array(sealed.utf8),
            headers: EgressFileRevealTests.proxy + [("Content-Type", "application/jose")])
        #expect(r.status == 200, "\(r.text)")
        #expect(r.header("Content-Type") == "application/json")
        let number = try #require(r.json?["number"] as? String)
        #expect(number != EgressFixture.card)
        #expect(number.hasPrefix("411111") && number.hasSuffix("1111"))
        #expect(r.json?["status"] as? String == "ok")

        // One byte of the tag changed: refused, and the sealed bytes never reach the caller.
        var parts = sealed.split(separator: ".").map(String.init)
        parts[4] = (parts[4].first == "A" ? "B" : "A") + parts[4].dropFirst()
        let tampered = try f.server.client().request(
            "POST", "/egress/signed/v1/pay", body: Array(parts.joined(separator: ".").utf8),
            headers: EgressFileRevealTests.proxy + [("Content-Type", "application/jose")])
        #expect(tampered.status == 502)
        #expect(tampered.errorCode == 1401)
        #expect(tampered.text.contains("does not decrypt"))
    }
}

/// Issue 49: the steps run the same on every door (the forward proxy, inbound routes, a key on
/// a PKCS#11 token), and the logs name the steps that ran, never a key or a value.
@Suite(
    .enabled(if: TestPython.isAvailable, "needs CLOAK_TEST_PYTHON (scripts/test-python)"),
    .tags(.racy, .python, .sockets))
struct RouteStepDoorTests {
    static let keys = StepKeys.shared

    /// POSTs `json` with curl through the fixture's forward proxy, as the egress token, to
    /// `path` on the upstream.
    static func curl(_ f: EgressFixture, _ path: String, json: String) throws -> (
        out: String, err: String, status: Int32
    ) {
        try EgressFixture.run(
            "curl",
            [
                "-sS", "-i", "-x", "http://127.0.0.1:\(f.egressPort)", "--proxy-user",
                "egress:\(EgressFixture.egressToken)", "--cacert", f.server.egressCAFile,
                "https://127.0.0.1:\(f.upstream.port)\(path)", "-H", "Content-Type: application/json", "--data", json,
            ])
    }

    @Test func theForwardProxySignsWithCurlAndTheLogsNameTheSteps() throws {
        let f = try EgressFixture(
            extraRoutes: """
                    - id: signed
                      upstream: "https://127.0.0.1:PORT"
                      paths: ["/v2/*"]
                      methods: [POST]
                      request:
                        - {reveal: {json: ["$.card"]}}
                        - {digest: {header: Content-Digest}}
                        - http_signature:
                            algorithm: ed25519
                            key: "file:\(Self.keys.privateKey("ed25519"))"
                            keyid: forward-key
                            components: ["@method", "@authority", "@path", "content-digest"]
                      ca_file: "CA"
                      allow_private: true
                """, scopes: #""egress:psp", "egress:signed""#)
        defer { f.stop() }
        let alias = try f.alias()
        let r = try Self.curl(f, "/v2/pay", json: #"{"card":"\#(alias)"}"#)
        #expect(r.status == 0, "\(r.err)")
        let seen = try #require(f.upstream.received.last)
        #expect(seen.body == #"{"card":"\#(EgressFixture.card)"}"#)
        let verdict = try RouteStepVerifier.check(
            "rfc9421", seen, url: "https://127.0.0.1:\(f.upstream.port)\(seen.path)",
            key: try Self.keys.publicPEM("ed25519"), extra: ["algorithm": "ed25519", "keyid": "forward-key"])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(Poll.until { f.server.logs.lines.contains { $0.contains(#""msg":"egress""#) } })
        let egress = try #require(
            f.server.logs.lines.first { $0.contains(#""msg":"egress""#) && $0.contains("signed") })
        #expect(egress.contains(#""steps":"digest,http_signature""#), "\(egress)")
        let access = f.server.logs.lines.filter { $0.contains(#""msg":"request""#) && $0.contains("egress-proxy") }
        #expect(access.contains { $0.contains(#""steps":"digest,http_signature""#) }, "\(access)")
        let logs = f.server.logs.text
        #expect(!logs.contains(EgressFixture.card) && !logs.contains(alias))
        #expect(!logs.contains("PRIVATE KEY") && !logs.contains(StepKeys.secretBase64))
        #expect(!logs.contains(seen.header("Signature") ?? "-"))
    }

    /// An inbound route redacts what the client sent, then signs the redacted body for the
    /// operator's backend.
    @Test func anInboundRouteSignsTheRedactedBody() throws {
        let f = try InboundStepFixture(
            path: "/signed",
            request: """
                  - {redact: {json: ["$.card"], format: UUID, storage: PERSISTENT}}
                  - {digest: {}}
                  - http_signature: {algorithm: hmac-sha256, key: "env:STEP_SECRET", keyid: backend, components: ["@method", "@path", "content-digest"]}
                """)
        defer { f.stop() }
        let (upstream, server) = (f.upstream, f.server)
        let r = try server.client().request(
            "POST", "/proxy/signed/pay", json: #"{"card":"\#(EgressFixture.card)"}"#, headers: [])
        #expect(r.status == 200, "\(r.text)")
        let seen = try #require(upstream.received.last)
        #expect(!seen.body.contains(EgressFixture.card))
        let verdict = try RouteStepVerifier.check(
            "rfc9421", seen, url: "https://localhost:\(upstream.port)\(seen.path)", key: StepKeys.secretBase64,
            extra: ["algorithm": "hmac-sha256", "keyid": "backend"])
        #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        #expect(
            server.logs.lines.contains {
                $0.contains(#""msg":"request""#) && $0.contains(#""steps":"digest,http_signature""#)
            })
    }

    /// The other steps on an inbound route: each redacted value sealed for the backend, then
    /// Mastercard's OAuth header and an HMAC header over the sealed body.
    @Test func anInboundRouteSealsAndSignsForTheBackend() throws {
        let f = try InboundStepFixture(
            path: "/sealed",
            request: """
                  - {redact: {json: ["$.card"], format: UUID, storage: PERSISTENT}}
                  - {jwe: {key: "file:\(Self.keys.publicKey("rsa"))", json: ["$.card"]}}
                  - {oauth1_body_hash: {consumer_key: backend-key, key: "file:\(Self.keys.privateKey("rsa"))"}}
                  - {hmac_header: {key: "env:STEP_SECRET", header: X-Signature, parts: [method, path, body]}}
                """)
        defer { f.stop() }
        let (upstream, server) = (f.upstream, f.server)
        let r = try server.client().request(
            "POST", "/proxy/sealed/pay", json: #"{"card":"\#(EgressFixture.card)"}"#, headers: [])
        #expect(r.status == 200, "\(r.text)")
        let seen = try #require(upstream.received.last)
        let url = "https://localhost:\(upstream.port)\(seen.path)"
        let sealed = try RouteStepVerifier.check(
            "jwe", seen, url: url, key: try String(contentsOfFile: Self.keys.privateKey("rsa"), encoding: .utf8),
            extra: ["json": ["card"]])
        let alias = try #require((sealed["values"] as? [String])?.first)
        #expect(alias != EgressFixture.card && alias.hasPrefix("tok_"), "\(sealed)")
        let oauth = try RouteStepVerifier.check(
            "oauth1", seen, url: url, key: try Self.keys.publicPEM("rsa"), extra: ["consumer_key": "backend-key"])
        #expect(oauth["ok"] as? Bool == true, "\(oauth)")
        let mac = try RouteStepVerifier.check(
            "hmac_header", seen, url: url, key: StepKeys.secretBase64,
            extra: ["header": "X-Signature", "path": "/in/pay"])
        #expect(mac["ok"] as? Bool == true, "\(mac)")
    }

    /// A JWS through the forward proxy, then a digest of it and a signature over both.
    @Test func theForwardProxyChainsAJWSADigestAndASignature() throws {
        let f = try EgressFixture(
            extraRoutes: """
                    - id: chained
                      upstream: "https://127.0.0.1:PORT"
                      paths: ["/v3/*"]
                      methods: [POST]
                      request:
                        - {reveal: {json: ["$.card"]}}
                        - {jws: {algorithm: ES256, key: "file:\(Self.keys.privateKey("ec"))", kid: fwd}}
                        - {digest: {header: Content-Digest}}
                        - http_signature:
                            algorithm: ecdsa-p256-sha256
                            key: "file:\(Self.keys.privateKey("ec"))"
                            keyid: fwd-sig
                            components: ["@method", "@target-uri", "content-digest", "content-type"]
                      ca_file: "CA"
                      allow_private: true
                """, scopes: #""egress:chained""#)
        defer { f.stop() }
        let alias = try f.alias()
        let r = try Self.curl(f, "/v3/pay", json: #"{"card":"\#(alias)"}"#)
        #expect(r.status == 0, "\(r.err)")
        // The echo is the JWS, the card in it readable: not for this caller.
        #expect(r.out.contains("HTTP/1.1 502") && !r.out.contains(EgressFixture.card), "\(r.out)")
        let seen = try #require(f.upstream.received.last)
        let url = "https://127.0.0.1:\(f.upstream.port)\(seen.path)"
        let jws = try RouteStepVerifier.check(
            "jws", seen, url: url, key: try Self.keys.publicPEM("ec"), extra: ["algorithm": "ES256"])
        #expect(jws["payload"] as? String == #"{"card":"\#(EgressFixture.card)"}"#, "\(jws)")
        let signature = try RouteStepVerifier.check(
            "rfc9421", seen, url: url, key: try Self.keys.publicPEM("ec"),
            extra: ["algorithm": "ecdsa-p256-sha256", "keyid": "fwd-sig"])
        #expect(signature["ok"] as? Bool == true, "\(signature)")
    }

    /// Imports `StepKeys`' RSA key onto SoftHSM's first token under a fresh label; the URI
    /// naming it (with a PIN file in `directory`).
    static func tokenKey(in directory: TemporaryDirectory) throws -> String {
        let hsm = SoftHSM.shared
        let token = SoftHSM.tokens[0]
        let label = "route-\(UUID().uuidString.prefix(8).lowercased())"
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/softhsm2-util")
        process.arguments = [
            "--import", Self.keys.privateKey("rsa"), "--token", token.label, "--label", label, "--id", id, "--pin",
            token.pin,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(hsm.environment) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let pinFile = "\(directory.path)/pin-\(label)"
        try SoftHSM.writePIN(token.pin, to: pinFile)
        return hsm.uri(token: token.label, object: label + ";type=private", pinFile: pinFile)
    }

    /// The key never leaves the token: SoftHSM signs each request (RSA-PSS-SHA512).
    @Test(.enabled(if: SoftHSM.isAvailable, "needs softhsm2"))
    func aKeyOnAPKCS11TokenSigns() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let f = try RouteStepTests.fixture(
            """
                    - http_signature:
                        algorithm: rsa-pss-sha512
                        key: "\(try Self.tokenKey(in: directory))"
                        keyid: hsm-key
                        components: ["@method", "@target-uri", "content-type"]
            """)
        defer { f.stop() }
        for _ in 0..<3 {
            let (_, seen) = try RouteStepTests.send(f)
            let request = try #require(seen)
            let verdict = try RouteStepVerifier.check(
                "rfc9421", request, url: RouteStepTests.url(f, request), key: try Self.keys.publicPEM("rsa"),
                extra: ["algorithm": "rsa-pss-sha512", "keyid": "hsm-key"])
            #expect(verdict["ok"] as? Bool == true, "\(verdict)")
        }
    }

    /// The answer's key on the token too: jwcrypto seals to its public half, the token opens it.
    @Test(.enabled(if: SoftHSM.isAvailable, "needs softhsm2"))
    func aKeyOnAPKCS11TokenOpensAnAnswer() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let f = try RouteStepTests.fixture(
            "",
            response: """
                      response:
                        - jwe_decrypt: {key: "\(try Self.tokenKey(in: directory))"}
                        - {redact: {json: ["$.number"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                """)
        defer { f.stop() }
        let sealed = try RouteStepVerifier.jwe(
            #"{"number":"\#(EgressFixture.card)"}"#, to: try Self.keys.publicPEM("rsa"))
        let r = try f.server.client().request(
            "POST", "/egress/signed/v1/pay", body: Array(sealed.utf8),
            headers: EgressFileRevealTests.proxy + [("Content-Type", "application/jose")])
        #expect(r.status == 200, "\(r.text)")
        let number = try #require(r.json?["number"] as? String)
        #expect(number != EgressFixture.card && number.hasSuffix("1111"))
    }
}

/// An inbound route at `/proxy<path>` to a recording HTTPS upstream (`/in` there), with the
/// `request` list given (its items as YAML lines), and the step keys' environment.
final class InboundStepFixture {
    let certificates: TestCertificates
    let upstream: TLSUpstream
    let server: TestService

    init(path: String, request: String) throws {
        certificates = try TestCertificates()
        upstream = try TLSUpstream(certificates: certificates)
        let yaml = TestServer.configurationWithTokens.replacingOccurrences(
            of: "routes: []",
            with: """
                routes:
                  - id: "\(UUID().uuidString.lowercased())"
                    path: \(path)
                    upstream: "https://localhost:\(upstream.port)/in"
                    ca_file: "\(certificates.caFile)"
                    methods: [POST]
                    request:
                \(request.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
                """)
        server = try TestService(yaml: yaml, environment: StepKeys.environment)
    }

    func stop() {
        server.stop()
        upstream.stop()
        certificates.remove()
    }
}
