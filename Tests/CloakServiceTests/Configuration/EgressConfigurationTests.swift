import CloakHTTP
import CloakService
import CloakTesting
import Foundation
import Testing

/// `check-config` on `egress:` names every problem with its path.
struct EgressConfigurationTests {
    static func yaml(_ egress: String) -> String {
        TestServer.shippedConfiguration + "\negress:\n" + egress
    }

    @Test func aFullRouteLoads() throws {
        let configuration = try ServiceConfiguration.parse(
            yaml: Self.yaml(
                """
                  listen: "127.0.0.1:8081"
                  ca: {cert: data/ca.pem, key: data/ca-key.pem}
                  routes:
                    - id: stripe
                      upstream: "https://api.stripe.com"
                      paths: ["/v1/*"]
                      methods: [POST, GET]
                      request:
                        - {reveal: {form: ["card[number]", "card[cvc]"]}}
                      response:
                        - {redact: {json: ["$..card.number"], format: FPE_SIX_T_FOUR, storage: PERSISTENT}}
                      max_aliases: 10
                      connect_timeout_s: 2
                      response_timeout_s: 20
                """))
        let route = try #require(configuration.egress.route("stripe"))
        #expect(configuration.egress.listen?.port == 8081)
        let upstream = try #require(route.upstream)
        #expect(upstream.host == "api.stripe.com" && upstream.port == 443 && upstream.scheme == .https)
        #expect(
            route.allows(method: "POST", path: "/v1/charges") && !route.allows(method: "DELETE", path: "/v1/charges"))
        #expect(route.requestOperations.first?.action == .reveal && route.responseOperations.first?.action == .redact)
        #expect(!upstream.allowPrivate && route.maxAliases == 10)
    }

    @Test(arguments: [
        ("routes: [{id: Stripe, upstream: \"https://api.stripe.com\"}]", "egress.routes[0].id"),
        ("routes: [{id: s, upstream: \"https://api.stripe.com/v1\"}]", "egress.routes[0].upstream"),
        ("routes: [{id: s, upstream: \"ftp://api.stripe.com\"}]", "egress.routes[0].upstream"),
        ("routes: [{id: s, upstream: \"https://10.0.0.5\"}]", "egress.routes[0].upstream"),
        ("routes: [{id: s, upstream: \"https://localhost:8443\"}]", "egress.routes[0].upstream"),
        ("routes: [{id: s, upstream: \"https://a.example\", paths: [\"v1/*\"]}]", "egress.routes[0].paths[0]"),
        ("routes: [{id: s, upstream: \"https://a.example\", methods: [CONNECT]}]", "egress.routes[0].methods[0]"),
        (
            "routes: [{id: s, upstream: \"https://a.example\", request: [{reveal: {json: [\"$.a\"], format: UUID}}]}]",
            "egress.routes[0].request[0].reveal.format"
        ),
        (
            "routes: [{id: s, upstream: \"https://a.example\", request: [{reveal: {}, redact: {json: [\"$.a\"]}}]}]",
            "egress.routes[0].request[0]"
        ),
        (
            "routes: [{id: s, upstream: \"https://a.example\", request: [{reveal: {header: [Proxy-Authorization]}}]}]",
            "egress.routes[0].request[0].reveal.header[0]"
        ),
        ("routes: [{id: s, upstream: \"https://a.example\", max_aliases: 0}]", "egress.routes[0].max_aliases"),
        (
            "routes: [{id: s, upstream: \"https://a.example\", client_cert: {cert: /nonexistent.pem}}]",
            "egress.routes[0].client_cert"
        ),
        (
            "routes: [{id: s, upstream: \"https://a.example\"}, {id: s, upstream: \"https://b.example\"}]",
            "egress.routes[1].id"
        ),
        ("routes: [{id: s, upstream: \"http://a.example\"}]", "egress.routes[0].upstream"),
        ("listen: \"nowhere\"", "egress.listen"),
        ("proxy: true", "egress.proxy"),
    ])
    func problemsAreNamedByPath(egress: String, path: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.parse(yaml: Self.yaml("  " + egress))
        }
        #expect(error?.issues.contains { $0.path == path } == true, "\(error?.issues.map(\.path) ?? [])")
    }

    /// Files that exist and can be read but that OpenSSL cannot use (a CA file that is not PEM,
    /// a key that is not the certificate's) are refused at load, named by path, rather than
    /// failing every request to the route; the same files made by `openssl` load.
    @Test func tlsFilesOpenSSLCannotUseAreRefusedAtLoad() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let notPEM = "\(certificates.directory.path)/not.pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: notPEM))
        let route = { (files: String) in
            Self.yaml("  routes: [{id: s, upstream: \"https://a.example\", \(files)}]")
        }
        let cases = [
            ("ca_file: \"\(notPEM)\"", "egress.routes[0].ca_file"),
            (
                "client_cert: {cert: \"\(certificates.clientCertificate)\", key: \"\(certificates.serverKey)\"}",
                "egress.routes[0].client_cert"
            ),
            ("client_cert: {cert: \"\(notPEM)\", key: \"\(certificates.clientKey)\"}", "egress.routes[0].client_cert"),
        ]
        for (files, path) in cases {
            let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: route(files)) }
            #expect(error?.issues.contains { $0.path == path } == true, "\(files): \(error?.issues.map(\.path) ?? [])")
        }
        let good =
            "ca_file: \"\(certificates.caFile)\", client_cert: {cert: \"\(certificates.clientCertificate)\", key: \"\(certificates.clientKey)\"}"
        #expect(throws: Never.self) { try ServiceConfiguration.parse(yaml: route(good)) }
        let inbound = TestServer.shippedConfiguration.replacingOccurrences(
            of: "routes: []",
            with:
                "routes: [{id: \"3d4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10\", path: /x, upstream: \"https://a.example/\", ca_file: \"\(notPEM)\"}]"
        )
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: inbound) }
        #expect(error?.issues.contains { $0.path == "routes[0].ca_file" } == true, "\(error?.issues.map(\.path) ?? [])")
    }

    @Test func egressScopesAreKnownScopes() throws {
        let yaml = TestServer.shippedConfiguration.replacingOccurrences(
            of: "  tokens: []",
            with:
                "  tokens: [{id: b, sha256: \"\(String(repeating: "a", count: 64))\", scopes: [\"egress:stripe\", \"egress:*\"]}]"
        )
        #expect(throws: Never.self) { try ServiceConfiguration.parse(yaml: yaml) }
        let bad = yaml.replacingOccurrences(of: "egress:stripe", with: "egress:Stripe!")
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: bad) }
    }
}
