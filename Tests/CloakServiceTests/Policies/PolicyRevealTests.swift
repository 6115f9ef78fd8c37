import CloakCrypto
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Issue 77 at `GET /aliases`: a token held to access policies sees each value whole, masked,
/// redacted or not at all (a miss's answer), and reaches no endpoint that does not judge them.
@Suite struct PolicyRevealTests {
    static let supportToken = "support-secret-0123456789abcdef"
    static let fraudToken = "fraud-secret-0123456789abcdef01"
    static let attributesToken = "attributes-secret-0123456789abc"

    static var yaml: String {
        func entry(_ id: String, _ secret: String, _ policies: String) -> String {
            let hex = Digest.sha256(Array(secret.utf8)).map { String(format: "%02x", $0) }.joined()
            return "{id: \(id), sha256: \"\(hex)\", scopes: [aliases:reveal, aliases:create], policies: [\(policies)]}"
        }
        let attributes = Digest.sha256(Array(attributesToken.utf8)).map { String(format: "%02x", $0) }.joined()
        let tokens = [
            entry("support", supportToken, "support"), entry("fraud", fraudToken, "fraud"),
            "{id: attributes, sha256: \"\(attributes)\", scopes: [bins:read], policies: [support]}",
        ]
        return TestServer.configurationWithTokens.replacingOccurrences(
            of: "  tokens: [{id: full", with: "  tokens: [\(tokens.joined(separator: ", ")), {id: full")
                + """

                policies:
                  - id: support
                    rules:
                      - id: cards
                        effect: allow
                        transform: bin_last4
                        operations: [reveal]
                        classifiers: [card]
                      - id: ssn
                        effect: allow
                        transform: "***-**-####"
                        operations: [reveal]
                        classifiers: [ssn]
                      - id: secret
                        effect: deny
                        operations: [reveal]
                        metadata: {tier: secret}
                  - id: fraud
                    rules:
                      - id: with-reason
                        effect: allow
                        operations: [reveal]
                        when: {reason: "CASE-[0-9]{4,}.*"}

                """
    }

    /// Stores `value` with the full token and returns its UUID alias.
    static func store(_ client: some HTTPTestClient, _ value: String, classifiers: [String], metadata: String = "{}")
        throws -> String
    {
        let names = classifiers.map { "\"\($0)\"" }.joined(separator: ",")
        let created = try client.request(
            "POST", "/aliases",
            json:
                #"{"data":[{"value":"\#(value)","format":"UUID","classifiers":[\#(names)],"metadata":\#(metadata)}]}"#,
            headers: TestCards.bearer(TestServer.fullToken))
        return try #require(TestCards.aliases(created).first, "\(created.status) \(created.text)")
    }

    static func value(_ response: RawHTTPClient.Response) -> String? {
        ((response.json?["data"] as? [[String: Any]])?.first?["value"]) as? String
    }

    @Test func supportSeesCardsAsBinAndLastFourAndSSNsMaskedAndNoOtherAlias() throws {
        try withTestService(.inProcess, yaml: Self.yaml) { service in
            let client = try service.testClient()
            let card = try Self.store(client, "4111111111111111", classifiers: ["card"])
            let ssn = try Self.store(client, "123-45-6789", classifiers: ["ssn"])
            let support = TestCards.bearer(Self.supportToken)

            let shownCard = try client.request("GET", "/aliases/\(card)", body: nil, headers: support)
            #expect(shownCard.status == 200, "\(shownCard.text)")
            #expect(Self.value(shownCard) == "411111******1111")
            let aliases = (shownCard.json?["data"] as? [[String: Any]])?.first?["aliases"] as? [[String: Any]]
            #expect(aliases?.compactMap { $0["alias"] as? String } == [card], "only the alias asked by")

            let shownSSN = try client.request("GET", "/aliases/\(ssn)", body: nil, headers: support)
            #expect(Self.value(shownSSN) == "***-**-6789")

            // The full token, without policies, sees both whole.
            let full = TestCards.bearer(TestServer.fullToken)
            #expect(
                Self.value(try client.request("GET", "/aliases/\(card)", body: nil, headers: full))
                    == "4111111111111111")

            let masked = service.logs.lines.filter { $0.contains(#""action":"policy_mask""#) }
            #expect(masked.count == 2)
            #expect(masked.contains { $0.contains(#""policy":"support""#) && $0.contains(#""rule":"cards""#) })
            #expect(!service.logs.lines.joined().contains("4111111111111111"))
        }
    }

    @Test func aDenyAndADefaultDenyAnswerExactlyAsAMiss() throws {
        try withTestService(.inProcess, yaml: Self.yaml) { service in
            let client = try service.testClient()
            let secret = try Self.store(
                client, "4111111111111111", classifiers: ["card"], metadata: #"{"tier":"secret"}"#)
            let other = try Self.store(client, "a note", classifiers: ["note"])
            let support = TestCards.bearer(Self.supportToken)
            let miss = try client.request("GET", "/aliases/tok_sandbox_nosuchaliasatall00", body: nil, headers: support)
            for alias in [secret, other] {
                let denied = try client.request("GET", "/aliases/\(alias)", body: nil, headers: support)
                #expect(denied.status == 404 && denied.text == miss.text, "\(denied.text)")
            }
            // Several at once: the denied ones are left out as misses are; none shown is a 404.
            let card = try Self.store(client, "5555555555554444", classifiers: ["card"])
            let many = try client.request("GET", "/aliases?q=\(card),\(secret),\(other)", body: nil, headers: support)
            let data = many.json?["data"] as? [String: Any]
            #expect(many.status == 200 && Set(data?.keys.map { $0 } ?? []) == [card], "\(many.text)")
            let none = try client.request("GET", "/aliases?q=\(secret),\(other)", body: nil, headers: support)
            #expect(none.status == 404)
            // Each denied value's reveal event says what the caller got: not found.
            let reveals = service.logs.lines.filter { $0.contains(#""action":"reveal""#) }
            #expect(reveals.filter { $0.contains(#""result":"not_found""#) }.count >= 6, "\(reveals)")
            let denies = service.logs.lines.filter { $0.contains(#""action":"policy_deny""#) }
            #expect(
                denies.contains { $0.contains(#""rule":"secret""#) }
                    && denies.contains { $0.contains(#""rule":"none""#) })
        }
    }

    @Test func aReasonConditionNeedsTheHeaderAndKeepsItScrubbed() throws {
        try withTestService(.inProcess, yaml: Self.yaml) { service in
            let client = try service.testClient()
            let card = try Self.store(client, "4111111111111111", classifiers: ["card"])
            let fraud = TestCards.bearer(Self.fraudToken)
            #expect(try client.request("GET", "/aliases/\(card)", body: nil, headers: fraud).status == 404)
            let short = fraud + [("Cloak-Access-Reason", "CASE-1")]
            #expect(try client.request("GET", "/aliases/\(card)", body: nil, headers: short).status == 404)
            // Over 200 characters: no reason, however well it matches.
            let long = fraud + [("Cloak-Access-Reason", "CASE-20931 " + String(repeating: "x", count: 190))]
            #expect(try client.request("GET", "/aliases/\(card)", body: nil, headers: long).status == 404)
            let given = fraud + [("Cloak-Access-Reason", "CASE-20931 chargeback review")]
            #expect(
                Self.value(try client.request("GET", "/aliases/\(card)", body: nil, headers: given))
                    == "4111111111111111")
            // A reason holding a card number is kept scrubbed (the support token's mask is audited).
            let support = TestCards.bearer(Self.supportToken) + [("Cloak-Access-Reason", "ticket 4111111111111111")]
            #expect(try client.request("GET", "/aliases/\(card)", body: nil, headers: support).status == 200)
            let event = service.logs.lines.first { $0.contains(#""action":"policy_mask""#) }
            #expect(event?.contains("ticket") == true)
            #expect(!service.logs.lines.joined().contains("4111111111111111"))
        }
    }

    @Test func aTokenWithPoliciesReachesNoEndpointThatDoesNotJudgeThem() throws {
        try withTestService(.inProcess, yaml: Self.yaml) { service in
            let client = try service.testClient()
            let support = TestCards.bearer(Self.supportToken)
            // It holds aliases:create, but creating is not judged yet: refused, nothing stored.
            let create = try client.request(
                "POST", "/aliases", json: TestCards.body(["4111111111111111"]), headers: support)
            #expect(create.status == 403 && create.errorCode == 1301, "\(create.text)")
            #expect(create.text.contains("access policies"))
            let session = try client.request("POST", "/elements/sessions", json: "{}", headers: support)
            #expect(session.status == 403)
            // A card's attributes (bins:read without aliases:reveal) are not judged yet: refused,
            // whether the alias exists or not.
            let card = try Self.store(client, "4111111111111111", classifiers: ["card"])
            let attributes = TestCards.bearer(Self.attributesToken)
            let known = try client.request("GET", "/aliases/\(card)", body: nil, headers: attributes)
            let unknown = try client.request(
                "GET", "/aliases/tok_sandbox_nosuchaliasatall00", body: nil, headers: attributes)
            #expect(known.status == 403 && known.text == unknown.text, "\(known.text)")
        }
    }

    @Test func aMintedTokenInheritsItsRootsPolicies() throws {
        let configuration = try ServiceConfiguration.parse(yaml: Self.yaml, environment: [:])
        let root = try #require(configuration.auth.first { $0.id == "support" })
        #expect(root.access.isRestricted && root.policies == ["support"])
        var child = ServiceConfiguration.AccessToken(
            id: "child", sha256: Array(repeating: 1, count: 32), scopes: [.aliasesReveal])
        child.mintedBy = "grandchild-minter"
        var middle = ServiceConfiguration.AccessToken(
            id: "grandchild-minter", sha256: Array(repeating: 2, count: 32), scopes: [.aliasesReveal])
        middle.mintedBy = "support"
        let yaml = Dictionary(uniqueKeysWithValues: configuration.auth.map { ($0.id, $0) })
        let held = TokenDirectory.inheriting(child, yaml: yaml, stored: ["grandchild-minter": middle, "child": child])
        #expect(held.access.isRestricted && held.policies == ["support"])
        // An operator's token (no minter) and one minted by a token without policies stay free.
        #expect(!TokenDirectory.inheriting(middle, yaml: [:], stored: [:]).access.isRestricted)
        var byFull = child
        byFull.mintedBy = "full"
        #expect(!TokenDirectory.inheriting(byFull, yaml: yaml, stored: [:]).access.isRestricted)
    }

    @Test(arguments: [
        // 2026-11-30 is a Monday.
        ("2026-11-30T07:30:00Z", "Europe/Berlin", 1, 8 * 60 + 30),
        ("2026-11-29T23:30:00Z", "Europe/Berlin", 1, 30),
        ("2026-11-29T23:30:00Z", "UTC", 7, 23 * 60 + 30),
        ("2026-11-29T12:00:00Z", "America/New_York", 7, 7 * 60),
    ])
    func localTimeCountsWeekdaysFromMonday(at: String, zone: String, weekday: Int, minute: Int) throws {
        let date = try #require(ISO8601DateFormatter().date(from: at))
        let local = try #require(PolicyReveal.localTime(zone, at: date))
        #expect(local.weekday == weekday && local.minute == minute)
        #expect(PolicyReveal.localTime("Mars/Olympus", at: date) == nil)
    }
}
