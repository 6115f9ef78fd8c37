import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 49: a step that cannot run is refused when the configuration is read, by `check-config`
/// and `serve` alike, at the step's YAML path, and a key's bytes never show in the message.
struct RouteStepConfigurationTests {
    static let keys = StepKeys.shared

    static func yaml(_ request: String, response: String = "", upstream: String = "https://psp.example") -> String {
        TestServer.shippedConfiguration + """

            egress:
              routes:
                - id: psp
                  upstream: "\(upstream)"
                  paths: ["/v1/*"]
                  request:
                    - {reveal: {json: ["$.card"]}}
            \(request)
            \(response)
            """
    }

    static func issues(_ yaml: String, environment: [String: String] = StepKeys.environment) -> [(String, String)] {
        do {
            _ = try ServiceConfiguration.parse(yaml: yaml, environment: environment)
            return []
        } catch {
            return error.issues.map { ($0.path, $0.message) }
        }
    }

    @Test func everyStepLoadsWithFittingKeys() throws {
        let k = Self.keys
        let c = try ServiceConfiguration.parse(
            yaml: Self.yaml(
                """
                        - {digest: {header: Content-Digest}}
                        - {http_signature: {algorithm: ed25519, key: "file:\(k.privateKey("ed25519"))", keyid: a, components: ["@method"]}}
                        - {http_signature: {scheme: draft-cavage, key: "env:STEP_SECRET", keyid: b, components: [host]}}
                        - {oauth1_body_hash: {consumer_key: c, key: "file:\(k.privateKey("rsa"))"}}
                        - {jws: {algorithm: ES256, key: "file:\(k.privateKey("ec"))"}}
                        - {hmac_header: {key: "env:STEP_SECRET", header: X-Mac}}
                        - {jwe: {key: "file:\(k.publicKey("rsa"))"}}
                """,
                response: """
                          response:
                            - {jwe_decrypt: {key: "file:\(k.privateKey("rsa"))"}}
                    """),
            environment: StepKeys.environment)
        let route = try #require(c.egress.routes.first)
        #expect(
            route.requestSteps.map(\.name) == [
                "digest", "http_signature", "http_signature", "oauth1_body_hash", "jws", "hmac_header", "jwe",
            ])
        #expect(route.responseSteps.map(\.name) == ["jwe_decrypt"])
        #expect(
            route.stepNames == "digest,http_signature,http_signature,oauth1_body_hash,jws,hmac_header,jwe,jwe_decrypt")
    }

    @Test(arguments: [
        // A key file that is not there.
        (
            #"- {jws: {algorithm: RS256, key: "file:/nonexistent/key.pem"}}"#, "egress.routes[0].request[1].jws.key",
            "cannot read"
        ),
        // An algorithm the key cannot do.
        (
            "- {http_signature: {algorithm: rsa-pss-sha512, key: \"file:ED\", keyid: a, components: [\"@method\"]}}",
            "egress.routes[0].request[1].http_signature.key", "Ed25519"
        ),
        // RSA below 2048 bits.
        ("- {jws: {algorithm: RS256, key: \"file:RSA1024\"}}", "egress.routes[0].request[1].jws.key", "2048"),
        // A secret where a private key is needed, and the other way round.
        ("- {jws: {algorithm: RS256, key: \"env:STEP_SECRET\"}}", "egress.routes[0].request[1].jws.key", "private key"),
        (
            "- {hmac_header: {key: \"file:RSA\", header: X-Mac}}", "egress.routes[0].request[1].hmac_header.key",
            "HMAC secret"
        ),
        // JWE to a private key file: the provider's public key is what it takes.
        ("- {jwe: {key: \"file:RSA\"}}", "egress.routes[0].request[1].jwe.key", "public key"),
        // A variable that is not set, and a secret too short.
        (
            "- {hmac_header: {key: \"env:NO_SUCH_VARIABLE\", header: X-Mac}}",
            "egress.routes[0].request[1].hmac_header.key", "no NO_SUCH_VARIABLE"
        ),
        (
            "- {hmac_header: {key: \"env:SHORT\", header: X-Mac}}", "egress.routes[0].request[1].hmac_header.key",
            "at least 16"
        ),
        // Unknown algorithm, unknown component, a step before an operation.
        (
            "- {http_signature: {algorithm: hmac-md5, key: \"env:STEP_SECRET\", keyid: a, components: [\"@method\"]}}",
            "egress.routes[0].request[1].http_signature.algorithm", "expected one of"
        ),
        (
            "- {http_signature: {algorithm: hmac-sha256, key: \"env:STEP_SECRET\", keyid: a, components: [\"@status\"]}}",
            "egress.routes[0].request[1].http_signature.components[0]", "expected"
        ),
        ("- {digest: {}}\n        - {reveal: {json: [\"$.x\"]}}", "egress.routes[0].request[2]", "before them"),
        (
            "- {http_signature: {algorithm: hmac-sha256, key: \"env:STEP_SECRET\", components: [\"@method\"]}}",
            "egress.routes[0].request[1].http_signature.keyid", "required"
        ),
        // A key id that would break out of its quotes.
        (
            "- {http_signature: {scheme: draft-cavage, key: \"env:STEP_SECRET\", keyid: 'a\", x=\"1', components: [host]}}",
            "egress.routes[0].request[1].http_signature.keyid", "printable ASCII"
        ),
    ])
    func aStepThatCannotRunIsNamedByItsPath(step: String, path: String, message: String) throws {
        let k = Self.keys
        let text =
            step.replacingOccurrences(of: "file:ED", with: "file:" + k.privateKey("ed25519"))
            .replacingOccurrences(of: "file:RSA1024", with: "file:" + k.privateKey("rsa1024"))
            .replacingOccurrences(of: "file:RSA", with: "file:" + k.privateKey("rsa"))
        let found = Self.issues(
            Self.yaml("        " + text), environment: StepKeys.environment.merging(["SHORT": "tooshort"]) { a, _ in a }
        )
        let issue = found.first { $0.0 == path }
        #expect(issue != nil, "\(found)")
        #expect(issue?.1.contains(message) == true, "\(found)")
    }

    @Test func aPrivateKeyFileOthersMayReadIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let loose = "\(directory.path)/loose.key"
        try FileManager.default.copyItem(atPath: Self.keys.privateKey("rsa"), toPath: loose)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: loose)
        let found = Self.issues(Self.yaml("        - {jws: {algorithm: RS256, key: \"file:\(loose)\"}}"))
        #expect(found.map(\.0) == ["egress.routes[0].request[1].jws.key"])
        #expect(found.first?.1.contains("chmod 600") == true, "\(found)")
        #expect(!found.contains { $0.1.contains("PRIVATE KEY") })
        // Its public half is nobody's secret: any mode.
        let pub = "\(directory.path)/open.pub"
        try FileManager.default.copyItem(atPath: Self.keys.publicKey("rsa"), toPath: pub)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: pub)
        #expect(Self.issues(Self.yaml("        - {jwe: {key: \"file:\(pub)\"}}")).isEmpty)
    }

    @Test func echoRoutesAndAnswersTakeNoRequestSteps() throws {
        let inbound =
            TestServer.shippedConfiguration.replacingOccurrences(of: "routes: []\n", with: "") + """

                routes:
                  - id: 6f2c1c8e-7a5b-4d3e-9f1a-2b3c4d5e6f70
                    path: /echo
                    upstream: echo
                    request:
                      - {redact: {json: ["$.card"]}}
                      - {digest: {}}
                """
        #expect(Self.issues(inbound).map(\.0) == ["routes[0].upstream"])
        let answer = Self.issues(
            Self.yaml(
                "",
                response: """
                          response:
                            - {redact: {json: ["$.number"]}}
                            - {digest: {}}
                            - {jwe_decrypt: {key: "file:\(Self.keys.privateKey("rsa"))"}}
                    """))
        #expect(answer.map(\.0).contains("egress.routes[0].response[1]"), "\(answer)")
        #expect(answer.map(\.0).contains("egress.routes[0].response[2]"), "\(answer)")
    }

    /// The binary itself: `check-config` prints the path and fails, and `serve` refuses to start.
    @Test func checkConfigAndServeRefuseAMissingKeyFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = "\(directory.path)/cloak.yaml"
        try Self.yaml(#"        - {jws: {algorithm: RS256, key: "file:/nonexistent/key.pem"}}"#)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let check = try ProcessTests.run(["check-config", "--config", file])
        #expect(check.0 == 1)
        #expect(check.1.contains("egress.routes[0].request[1].jws.key"), "\(check.1)")
        let serve = try ProcessTests.run(["serve", "--config", file])
        #expect(serve.0 == 2)
        #expect(serve.1.contains("egress.routes[0].request[1].jws.key"), "\(serve.1)")
    }
}

/// A reload whose step key does not load is refused whole: the route keeps signing with the key
/// it had, and the problem is logged with the step's path (never the key).
@Suite(.tags(.racy, .sockets))
struct RouteStepReloadTests {
    @Test func aReloadWithAMissingKeyKeepsTheOldKey() throws {
        let good = RouteStepConfigurationTests.yaml(
            "        - {hmac_header: {key: \"env:STEP_SECRET\", header: X-Mac}}")
        try withTestServer(TestService(yaml: good, environment: StepKeys.environment)) { server throws in
            let host = ServiceHost(server.service)
            let before = host.service
            let outcome = host.reload {
                try ServiceConfiguration.parse(
                    yaml: RouteStepConfigurationTests.yaml(
                        "        - {hmac_header: {key: \"env:GONE\", header: X-Mac}}"),
                    environment: StepKeys.environment)
            }
            guard case .refused(let problems) = outcome else {
                Issue.record("the reload was applied")
                return
            }
            #expect(problems.contains { $0.contains("egress.routes[0].request[1].hmac_header.key") }, "\(problems)")
            #expect(host.service === before)
            #expect(host.service.configuration.egress.routes.first?.requestSteps.map(\.name) == ["hmac_header"])
            #expect(server.logs.text.contains("hmac_header.key"))
            #expect(!server.logs.text.contains(StepKeys.secretBase64))
        }
    }
}
