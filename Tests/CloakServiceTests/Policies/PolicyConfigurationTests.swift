import CloakCrypto
import Testing

@testable import CloakService

/// `policies[]` and `auth.tokens[].policies` (issue 77): what loads, compiled once a load, and
/// each malformed or not-yet-enforced form refused at its path.
@Suite struct PolicyConfigurationTests {
    static let digest = String(repeating: "ab", count: 32)

    static func yaml(policies: String, tokenPolicies: String = "[support]") -> String {
        """
        auth:
          tokens:
            - {id: support, sha256: "\(digest)", scopes: [aliases:reveal], policies: \(tokenPolicies)}
        policies:
        \(policies)
        """
    }

    static let support = """
          - id: support
            rules:
              - id: cards
                effect: allow
                transform: bin_last4
                operations: [reveal]
                formats: [FPE_SIX_T_FOUR, UUID]
                classifiers: [card]
                fields: [checkout.*]
                metadata: {region: eu}
                when:
                  client_in: [10.0.0.0/8, "2001:db8::/32"]
                  reason: "CASE-[0-9]+"
                  window: {days: [mon, tue, wed, thu, fri], from: "08:00", until: "18:00", zone: Europe/Berlin}
                  session: false
              - {id: ssn, effect: allow, transform: "***-**-####", operations: [reveal], classifiers: [ssn]}
              - {id: secret, effect: deny, operations: [reveal, lookup], metadata: {tier: secret}}
        """

    @Test func aPolicyLoadsAndItsTokenIsCompiled() throws {
        let configuration = try ServiceConfiguration.parse(yaml: Self.yaml(policies: Self.support), environment: [:])
        let policy = try #require(configuration.policies["support"])
        #expect(policy.rules.map(\.id) == ["cards", "ssn", "secret"])
        #expect(policy.rules[0].effect == .allow(.mask(.binLast4)))
        #expect(policy.rules[0].conditions.count == 4)
        #expect(policy.rules[1].effect == .allow(.mask(.pattern("***-**-####"))))
        #expect(policy.rules[2].effect == .deny && policy.rules[2].operations == [.reveal, .lookup])
        let token = try #require(configuration.auth.first)
        #expect(token.policies == ["support"] && token.access.isRestricted)
    }

    @Test func aYAMLBooleanReasonIsReadAsOneNeverAsAPattern() throws {
        let yaml = Self.yaml(
            policies: "  - {id: support, rules: [{id: r, effect: allow, operations: [reveal], when: {reason: yes}}]}")
        let configuration = try ServiceConfiguration.parse(yaml: yaml, environment: [:])
        #expect(configuration.policies["support"]?.rules.first?.conditions == [.reason(pattern: nil)])
    }

    @Test(arguments: [
        // A token naming a policy the file does not hold.
        ("tokens", yaml(policies: support, tokenPolicies: "[support, nope]"), "auth.tokens[0].policies[1]"),
        ("duplicate id", yaml(policies: support + "\n" + support), "policies[1].id"),
        (
            "bad id", yaml(policies: "  - {id: Support!, rules: [{id: r, effect: deny, operations: [reveal]}]}"),
            "policies[0].id"
        ),
        ("no rules", yaml(policies: "  - {id: support, rules: []}"), "policies[0].rules"),
        (
            "dry run",
            yaml(policies: "  - {id: support, dry_run: true, rules: [{id: r, effect: deny, operations: [reveal]}]}"),
            "policies[0].dry_run"
        ),
        (
            "no effect", yaml(policies: "  - {id: support, rules: [{id: r, operations: [reveal]}]}"),
            "policies[0].rules[0].effect"
        ),
        (
            "bad effect", yaml(policies: "  - {id: support, rules: [{id: r, effect: permit, operations: [reveal]}]}"),
            "policies[0].rules[0].effect"
        ),
        (
            "deny with transform",
            yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, transform: last4, operations: [reveal]}]}"),
            "policies[0].rules[0].transform"
        ),
        (
            "bad transform",
            yaml(
                policies: "  - {id: support, rules: [{id: r, effect: allow, transform: first4, operations: [reveal]}]}"),
            "policies[0].rules[0].transform"
        ),
        (
            "no operations", yaml(policies: "  - {id: support, rules: [{id: r, effect: deny}]}"),
            "policies[0].rules[0].operations"
        ),
        (
            "bad operation", yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, operations: [read]}]}"),
            "policies[0].rules[0].operations[0]"
        ),
        (
            "duplicate rule",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal]}, {id: r, effect: deny, operations: [lookup]}]}"
            ),
            "policies[0].rules[1].id"
        ),
        (
            "bad format",
            yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], formats: [FPE]}]}"),
            "policies[0].rules[0].formats[0]"
        ),
        (
            "bad field",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], fields: [card_number]}]}"),
            "policies[0].rules[0].fields[0]"
        ),
        (
            "bad network",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {client_in: [10.0.0.0/33]}}]}"
            ),
            "policies[0].rules[0].when.client_in[0]"
        ),
        (
            "bad reason",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {reason: \"(\"}}]}"),
            "policies[0].rules[0].when.reason"
        ),
        (
            "bad zone",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {window: {from: \"08:00\", until: \"18:00\", zone: Mars/Olympus}}}]}"
            ),
            "policies[0].rules[0].when.window.zone"
        ),
        (
            "bad time",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {window: {from: \"8am\", until: \"18:00\", zone: UTC}}}]}"
            ),
            "policies[0].rules[0].when.window.from"
        ),
        (
            "empty window",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {window: {from: \"08:00\", until: \"08:00\", zone: UTC}}}]}"
            ),
            "policies[0].rules[0].when.window.until"
        ),
        (
            "bad day",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], when: {window: {days: [monday], from: \"08:00\", until: \"18:00\", zone: UTC}}}]}"
            ),
            "policies[0].rules[0].when.window.days[0]"
        ),
        (
            "quota",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: allow, operations: [reveal], when: {quota_per_hour: 50}}]}"
            ),
            "policies[0].rules[0].when.quota_per_hour"
        ),
        (
            "a single field",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], fields: [checkout.card_number]}]}"
            ),
            "policies[0].rules[0].fields[0]"
        ),
        (
            "empty classifiers",
            yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], classifiers: []}]}"),
            "policies[0].rules[0].classifiers"
        ),
        (
            "empty formats",
            yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], formats: []}]}"),
            "policies[0].rules[0].formats"
        ),
        (
            "no days",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: allow, operations: [reveal], when: {window: {days: [], from: \"08:00\", until: \"18:00\", zone: UTC}}}]}"
            ),
            "policies[0].rules[0].when.window.days"
        ),
        (
            "reason false",
            yaml(
                policies:
                    "  - {id: support, rules: [{id: r, effect: allow, operations: [reveal], when: {reason: false}}]}"),
            "policies[0].rules[0].when.reason"
        ),
        (
            "unknown key",
            yaml(policies: "  - {id: support, rules: [{id: r, effect: deny, operations: [reveal], colour: red}]}"),
            "policies[0].rules[0].colour"
        ),
    ])
    func aMalformedPolicyIsRefusedAtItsPath(_ name: String, _ yaml: String, _ path: String) {
        let error = #expect(throws: ConfigurationError.self, "\(name)") {
            try ServiceConfiguration.parse(yaml: yaml, environment: [:])
        }
        #expect(error?.issues.contains { $0.path == path } == true, "\(name): \(error?.issues.map(\.path) ?? [])")
    }
}
