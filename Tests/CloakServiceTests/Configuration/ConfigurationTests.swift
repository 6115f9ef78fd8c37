import CloakHTTP
import CloakService
import CloakTesting
import Testing

@Suite struct ConfigurationTests {
    @Test func shippedConfigurationIsValid() throws {
        let c = try ServiceConfiguration.parse(yaml: TestServer.shippedConfiguration)
        #expect(c.forms.keys.sorted() == ["card_import", "checkout", "identity", "kyc"])
        #expect(c.server.port == 8080)
        #expect(c.server.maxBodyBytes == 1_048_576)
    }

    @Test func environmentOverridesScalarKeys() throws {
        let c = try ServiceConfiguration.parse(
            yaml: TestServer.shippedConfiguration,
            environment: [
                "CLOAK_SERVER_LISTEN": "[::1]:9000", "CLOAK_SERVER_THREADS": "3", "CLOAK_VAULT_ENVIRONMENT": "live",
                "CLOAK_UNRELATED": "x",
            ])
        #expect(c.server.host == "::1")
        #expect(c.server.port == 9000)
        #expect(c.server.threads == 3)
        #expect(c.vault.environment == "live")
    }

    @Test func badEnvironmentOverrideIsReportedAtItsPath() {
        let error = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.parse(yaml: "", environment: ["CLOAK_SERVER_THREADS": "many"])
        }
        #expect(error?.issues.map(\.path) == ["server.threads"])
    }

    static let broken = """
        server: {listen: "nowhere", colour: blue}
        forms:
          f:
            mapping_policy: xml
            fields:
              - {name: a, type: cardNumbr}
              - {name: a, type: none}
              - {name: b, type: none, validation: [{pattern: "(unclosed"}, {lenght: 3}, bogus]}
              - {name: c, type: cvc, serializers: [{month: m}, {year: y}]}
              - {name: d, type: expDate, input_date_format: longYear, output_date_format: sideways}
              - {name: e, type: none, mask: ["ab", {regex: "["}], format_pattern: "###"}
              - {name: g, type: cvc, card_field: nowhere}
              - {name: h, type: none, tokenization: {format: FPE_MAGIC, storage: FOREVER}}
              - {name: i, type: date, validation: [{date_range: {start: "2020-02-30"}}]}
        routes:
          - {id: not-a-uuid, path: post, upstream: "ftp://x", form: missing}
        """

    @Test func everyProblemIsReportedWithItsYAMLPath() {
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: Self.broken) }
        let paths = Set(error?.issues.map(\.path) ?? [])
        let expected: Set<String> = [
            "server.listen", "server.colour",
            "forms.f.mapping_policy",
            "forms.f.fields[0].type",
            "forms.f.fields[1].name",
            "forms.f.fields[2].validation[0].pattern", "forms.f.fields[2].validation[1].lenght",
            "forms.f.fields[2].validation[2]",
            "forms.f.fields[3].serializers",
            "forms.f.fields[4].output_date_format",
            "forms.f.fields[5].mask[0]", "forms.f.fields[5].mask[1].regex", "forms.f.fields[5].mask",
            "forms.f.fields[6].card_field",
            "forms.f.fields[7].tokenization.format", "forms.f.fields[7].tokenization.storage",
            "forms.f.fields[8].validation[0].date_range.start",
            "routes[0].id", "routes[0].path", "routes[0].upstream", "routes[0].form",
        ]
        #expect(expected.subtracting(paths).isEmpty, "missing: \(expected.subtracting(paths).sorted())")
    }

    @Test func tlsAndCAFilesMustBeCompleteAndReadable() {
        let yaml = """
            server: {tls: {cert: /nonexistent/chain.pem, key: /nonexistent/key.pem}}
            routes:
              - {id: "5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d", path: /p, upstream: "https://api.example/", ca_file: /nonexistent/ca.pem}
              - {id: "6f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d", path: /q, upstream: "https://user@api.example/"}
            """
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        let paths = Set(error?.issues.map(\.path) ?? [])
        #expect(paths.isSuperset(of: ["server.tls.cert", "server.tls.key", "routes[0].ca_file", "routes[1].upstream"]))
        let half = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.parse(yaml: "server: {tls: {cert: /nonexistent/chain.pem}}")
        }
        #expect(half?.issues.map(\.path).contains("server.tls") == true)
    }

    @Test func invalidYAMLIsAnErrorNotACrash() {
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: "forms: [unclosed") }
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: "- just\n- a list") }
    }

    /// Defect 13: values that parse but would crash or exhaust memory at run time are refused
    /// by `check-config`, each at its path, with its range.
    @Test(arguments: [
        (
            "routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /p, upstream: echo, response_timeout_s: inf}]",
            "routes[0].response_timeout_s"
        ),
        (
            "routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /p, upstream: echo, response_timeout_s: 1e300}]",
            "routes[0].response_timeout_s"
        ),
        (
            "routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /p, upstream: echo, connect_timeout_s: nan}]",
            "routes[0].connect_timeout_s"
        ),
        ("vault: {volatile_ttl_s: 99999999999999}", "vault.volatile_ttl_s"),
        ("server: {drain_timeout_s: .inf}", "server.drain_timeout_s"),
        ("server: {header_timeout_s: 0}", "server.header_timeout_s"),
        ("server: {body_timeout_s: 86400}", "server.body_timeout_s"),
        (
            "forms: {f: {mapping_policy: nestedJSONWithArrayMerge, fields: [{name: \"x[85555555].y\"}]}}",
            "forms.f.fields[0].name"
        ),
        ("limits: {anonymous: {requests_per_minute: 0}}", "limits.anonymous.requests_per_minute"),
        // Found by the config fuzzer: a field named "." (or an empty serializer component) made
        // every nested policy answer that one value as the whole body.
        ("forms: {f: {fields: [{name: a}, {name: \".\"}]}}", "forms.f.fields[1].name"),
        (
            "forms: {f: {fields: [{name: e, type: expDate, serializers: [{month: \"\"}, {year: y}]}]}}",
            "forms.f.fields[0].name"
        ),
        // Found by the config fuzzer: a custom brand's CVC length sized a string of that many characters.
        (
            "forms: {f: {card_brands: {custom: [{name: acme, regex: \"^9\", cvc_lengths: [4099276460824344802]}]}, fields: [{name: a}]}}",
            "forms.f.card_brands.custom[0].cvc_lengths[0]"
        ),
        (
            "forms: {f: {card_brands: {custom: [{name: acme, regex: \"^9\", lengths: [77777777777]}]}, fields: [{name: a}]}}",
            "forms.f.card_brands.custom[0].lengths[0]"
        ),
        (
            "auth: {tokens: [{id: a, sha256: \"\(String(repeating: "0", count: 64))\", requests_per_minute: -1}]}",
            "auth.tokens[0].requests_per_minute"
        ),
        (
            "auth: {tokens: [{id: a, sha256: \"\(String(repeating: "0", count: 64))\", bucket_values_per_hour: 0}]}",
            "auth.tokens[0].bucket_values_per_hour"
        ),
        (
            "auth: {tokens: [{id: a, sha256: \"\(String(repeating: "0", count: 64))\", bucket_values_per_hour: 1e99}]}",
            "auth.tokens[0].bucket_values_per_hour"
        ),
        (
            "auth: {tokens: [{id: a, sha256: \"\(String(repeating: "0", count: 64))\", scopes: [aliases:lookups]}]}",
            "auth.tokens[0].scopes[0]"
        ),
        ("elements: {native: maybe}", "elements.native"),
        (
            "auth: {open_tokenize: false}\nforms: {f: {fields: [{name: a}]}}\nroutes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /p, form: f, upstream: echo, forward_authorization: true}]",
            "routes[0].forward_authorization"
        ),
    ])
    func valuesThatWouldFailAtRunTimeAreRefused(yaml: String, path: String) {
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        #expect(error?.issues.contains { $0.path == path } == true, "\(error?.issues.map(\.path) ?? [])")
    }

    @Test func newKeysHaveTheirDefaults() throws {
        let c = try ServiceConfiguration.parse(yaml: "")
        #expect(c.openTokenize)
        #expect(c.limits.anonymous == RateLimit(requestsPerMinute: 600, burst: 60))
        #expect(c.limits.token == RateLimit(requestsPerMinute: 6000, burst: 600))
        #expect(c.server.headerTimeoutSeconds == 10 && c.server.bodyTimeoutSeconds == 30)
    }
}
