import CloakTesting
import CloakVault
import Foundation
import Testing

/// The Vault API in process, on the real service and a real SQLite vault.
@Suite(.tags(.sockets)) struct VaultAPITests {
    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    static func aliases(_ r: RawHTTPClient.Response) -> [[String: Any]] {
        ((r.json?["data"] as? [[String: Any]]) ?? []).flatMap { ($0["aliases"] as? [[String: Any]]) ?? [] }
    }

    @Test func createRevealAndDeleteWithTheRightScopes() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let created = try client.request(
                "POST", "/aliases",
                json: #"""
                    {"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT","classifiers":["card"]}]}
                    """#, headers: Self.bearer(TestServer.createOnlyToken))
            #expect(created.status == 201, "\(created.text)")
            let record = try #require((created.json?["data"] as? [[String: Any]])?.first)
            #expect(record["storage"] as? String == "PERSISTENT")
            #expect(record["classifiers"] as? [String] == ["card"])
            #expect((record["created_at"] as? String)?.hasSuffix("Z") == true)
            let alias = try #require(Self.aliases(created).first?["alias"] as? String)
            #expect(
                alias.count == 16 && alias.hasPrefix("411111") && alias.hasSuffix("1111") && alias != "4111111111111111"
            )

            let revealed = try client.request(
                "GET", "/aliases/\(alias)", headers: Self.bearer(TestServer.revealOnlyToken))
            #expect(revealed.status == 200)
            #expect(((revealed.json?["data"] as? [[String: Any]])?.first?["value"] as? String) == "4111111111111111")

            let many = try client.request(
                "GET", "/aliases?q=\(alias),tok_sandbox_missing", headers: Self.bearer(TestServer.fullToken))
            #expect(many.status == 200)
            #expect(
                ((many.json?["data"] as? [String: Any])?[alias] as? [String: Any])?["value"] as? String
                    == "4111111111111111")

            let classified = try client.request(
                "PUT", "/aliases/\(alias)", json: #"{"data":{"classifiers":["pci","card"]}}"#,
                headers: Self.bearer(TestServer.fullToken))
            #expect(classified.status == 204)

            #expect(
                try client.request("DELETE", "/aliases/\(alias)", headers: Self.bearer(TestServer.fullToken)).status
                    == 204)
            let gone = try client.request("GET", "/aliases/\(alias)", headers: Self.bearer(TestServer.fullToken))
            #expect(gone.status == 404 && gone.errorCode == 1404)
            // Audit lines: reveal, reveal (x2 for ?q=), update, delete, reveal-not-found; never the
            // value. The create is an event in the store only (docs/audit.md).
            let audit = server.logs.lines.filter { $0.contains(#""msg":"audit""#) }
            #expect(audit.count == 6)
            #expect(!audit.contains { $0.contains(#""action":"create""#) })
            #expect(audit.contains { $0.contains(#""action":"update""#) && $0.contains(#""result":"ok""#) })
            // An alias is a capability: audit lines carry its keyed reference, never the alias.
            #expect(!server.logs.text.contains(alias))
            let reference = server.vault.auditReference(alias)
            #expect(reference.hasPrefix("ar_") && reference.count == 19)
            #expect(audit.filter { $0.contains(#""alias_ref":"\#(reference)""#) }.count == 5)
            #expect(!server.logs.text.contains("4111111111111111"))
        }
    }

    @Test func missingOrWrongTokensGet1300AndMissingScopesGet1301() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            let body = #"{"data":[{"value":"123-45-6789","format":"UUID"}]}"#
            #expect(try client.request("POST", "/aliases", json: body).errorCode == 1300)
            #expect(try client.request("POST", "/aliases", json: body, headers: Self.bearer("nope")).errorCode == 1300)
            #expect(
                try client.request("POST", "/aliases", json: body, headers: [("Authorization", "Basic eDp5")]).status
                    == 401
            )
            let forbidden = try client.request(
                "POST", "/aliases", json: body, headers: Self.bearer(TestServer.revealOnlyToken))
            #expect(forbidden.status == 403 && forbidden.errorCode == 1301)
            let created = try client.request(
                "POST", "/aliases", json: body, headers: Self.bearer(TestServer.createOnlyToken))
            let alias = try #require(Self.aliases(created).first?["alias"] as? String)
            #expect(
                try client.request("GET", "/aliases/\(alias)", headers: Self.bearer(TestServer.createOnlyToken))
                    .errorCode
                    == 1301)
            #expect(
                try client.request("DELETE", "/aliases/\(alias)", headers: Self.bearer(TestServer.revealOnlyToken))
                    .errorCode == 1301)
            #expect(try client.request("GET", "/aliases/\(alias)").errorCode == 1300)
        }
    }

    @Test func persistentValuesAreDeduplicatedAndVolatileOnesAreNot() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            func alias(_ body: String, path: String = "/aliases") throws -> String? {
                Self.aliases(
                    try client.request("POST", path, json: body, headers: Self.bearer(TestServer.createOnlyToken))
                )
                .first?["alias"] as? String
            }
            let p = #"{"data":[{"value":"123-45-6789","format":"UUID","storage":"PERSISTENT"}]}"#
            let v = #"{"data":[{"value":"737","format":"UUID","storage":"VOLATILE"}]}"#
            #expect(try alias(p) == alias(p))
            #expect(try alias(v) != alias(v))
            // Anonymous (open) tokenization is never deduplicated: its answers cannot be compared.
            func open(_ body: String) throws -> String? {
                Self.aliases(try client.request("POST", "/tokens", json: body)).first?["alias"] as? String
            }
            #expect(try open(p) != open(p))
        }
    }

    @Test func aFullThreeDigitAliasSpaceAnswers1500NotADuplicate() throws {
        try withTestServer(TestService()) { server throws in
            let client = try server.client()
            var issued = Set<String>()
            var refused: RawHTTPClient.Response?
            for _ in 0..<11 where refused == nil {
                let items = (0..<100).map { _ in
                    #"{"value":"737","format":"NUM_LENGTH_PRESERVING","storage":"VOLATILE"}"#
                }
                let r = try client.request(
                    "POST", "/aliases", json: #"{"data":[\#(items.joined(separator: ","))]}"#,
                    headers: [("Authorization", "Bearer \(TestServer.createOnlyToken)")])
                if r.status == 201 {
                    for a in Self.aliases(r) { issued.insert(a["alias"] as? String ?? "") }
                } else {
                    refused = r
                }
            }
            // 1,000 three-digit aliases, one of them the value itself (never issued): 999 fit.
            #expect(issued.count <= 999)
            #expect(refused?.status == 503 && refused?.errorCode == 1500)
        }
    }

    static let malformed: [(String, String, Int, Int)] = [
        ("missing value", #"{"data":[{"format":"UUID"}]}"#, 400, 1002),
        ("empty value", #"{"data":[{"value":""}]}"#, 400, 1002),
        ("number value", #"{"data":[{"value":4111111111111111}]}"#, 400, 1002),
        ("unknown format", #"{"data":[{"value":"x","format":"ROT13"}]}"#, 400, 1002),
        ("unknown storage", #"{"data":[{"value":"x","storage":"FOREVER"}]}"#, 400, 1002),
        ("data not array", #"{"data":{"value":"x"}}"#, 400, 1002),
        ("empty data", #"{"data":[]}"#, 400, 1002),
        ("item not object", #"{"data":["4111111111111111"]}"#, 400, 1002),
        ("unknown member", #"{"data":[{"value":"x","colour":"red"}]}"#, 400, 1002),
        ("unknown top member", #"{"data":[{"value":"x"}],"extra":1}"#, 400, 1002),
        ("bad classifiers", #"{"data":[{"value":"x","classifiers":"pci"}]}"#, 400, 1002),
        ("ssn format on 5 chars", #"{"data":[{"value":"12345","format":"FPE_SSN_T_FOUR"}]}"#, 400, 1002),
        (
            "letters for a numeric format", #"{"data":[{"value":"4111abcd11111111","format":"FPE_SIX_T_FOUR"}]}"#, 400,
            1002
        ),
        ("not JSON", "value=4111111111111111", 400, 1002),
    ]

    @Test(arguments: malformed.indices)
    func malformedVaultBodiesGetAClearError(index: Int) throws {
        let (name, body, status, code) = Self.malformed[index]
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request("POST", "/tokens", json: body)
            #expect(r.status == status, "\(name): \(r.text)")
            #expect(r.errorCode == code, "\(name)")
            #expect(!r.text.contains("4111111111111111") && !r.text.contains("12345\""), "\(name) echoed the value")
        }
    }

    @Test func aBatchOverTheLimitIsRefusedAndNothingIsWritten() throws {
        try withTestServer(TestService(environment: ["CLOAK_VAULT_MAX_BATCH": "100"])) { server throws in
            let items = (0..<10_000).map { #"{"value":"v\#($0)"}"# }.joined(separator: ",")
            let r = try server.client().request("POST", "/tokens", json: #"{"data":[\#(items)]}"#)
            #expect(r.status == 400 && r.errorCode == 1002)
            let mixed = try server.client().request(
                "POST", "/tokens",
                json:
                    #"{"data":[{"value":"5555555555554444","format":"FPE_SIX_T_FOUR"},{"value":"12","format":"FPE_SSN_T_FOUR"}]}"#
            )
            #expect(mixed.errorCode == 1002)
            #expect(mixed.text.contains("data[1]"))
        }
    }
}

/// `POST /forms/{form}/tokens` and `/aliases`: the SDK's flat tokenize result.
@Suite(.tags(.sockets)) struct FormTokenizationTests {
    static let body = """
        {"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123",\
        "card_data.exp_date":"12/40","card_data.card_holder":"Jane Doe","billing.phone":"(555)123-4567",\
        "customer.ssn":"123-45-6789"}}
        """

    @Test func tokenizedFieldsBecomeAliasesAndOthersStayRaw() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request("POST", "/forms/checkout/tokens", json: Self.body)
            #expect(r.status == 200, "\(r.text)")
            let json = try #require(r.json)
            let card = try #require(json["card_data.card_number"] as? String)
            #expect(card.count == 16 && card.hasSuffix("1111") && card != "4111111111111111")
            let cvc = try #require(json["card_data.card_cvc"] as? String)
            #expect(cvc.hasPrefix("tok_sandbox_") && cvc != "123")  // the shipped form: VOLATILE UUID
            #expect((json["customer.ssn"] as? String)?.hasPrefix("tok_sandbox_") == true)
            // Not tokenized: output text after serializers, conversion and transform.
            #expect(json["card_data.exp_month"] as? String == "12")
            #expect(json["card_data.exp_year"] as? String == "2040")
            #expect(json["card_data.exp_date"] == nil)
            #expect(json["card_data.card_holder"] as? String == "Jane Doe")
            #expect(json["billing.phone"] as? String == "5551234567")
            #expect(!r.text.contains("4111111111111111") && !r.text.contains("123-45-6789"))
            // The alias reveals the value the field would have sent.
            let revealed = try server.client().request(
                "GET", "/aliases/\(card)",
                headers: VaultAPITests.bearer(TestServer.fullToken))
            #expect(((revealed.json?["data"] as? [[String: Any]])?.first?["value"] as? String) == "4111111111111111")
        }
    }

    @Test func requiredFailuresGet1001BeforeAnythingIsStored() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/forms/checkout/tokens",
                json:
                    #"{"fields":{"card_data.card_number":"4111 1111 1111 1112"}}"#)
            #expect(r.status == 422 && r.errorCode == 1001)
            let extra = try #require((r.json?["error"] as? [String: Any])?["extraInfo"] as? [String: Any])
            #expect(
                (extra["VGSSDKErrorInputDataRequiredValid"] as? [String])?.contains("card_data.card_number") == true)
            #expect((extra["VGSSDKErrorInputDataRequired"] as? [String])?.contains("card_data.card_holder") == true)
            #expect(!r.text.contains("4111"))
        }
    }

    @Test func aliasesEndpointNeedsTheCreateScope() throws {
        try withTestServer(TestService()) { server throws in
            #expect(try server.client().request("POST", "/forms/checkout/aliases", json: Self.body).errorCode == 1300)
            let ok = try server.client().request(
                "POST", "/forms/checkout/aliases", json: Self.body,
                headers: VaultAPITests.bearer(TestServer.createOnlyToken))
            #expect(ok.status == 200)
            let again = try server.client().request(
                "POST", "/forms/checkout/aliases", json: Self.body,
                headers: VaultAPITests.bearer(TestServer.createOnlyToken))
            // PERSISTENT card alias is stable; the VOLATILE CVC is not deduplicated.
            #expect(ok.json?["card_data.card_number"] as? String == again.json?["card_data.card_number"] as? String)
            #expect(ok.json?["card_data.card_cvc"] as? String != again.json?["card_data.card_cvc"] as? String)
        }
    }
}

/// `POST /forms/{form}/send`: the redacted echo, exactly the body an upstream would receive.
@Suite(.tags(.sockets)) struct RedactedEchoTests {
    @Test func theBodyIsMappedByTheFormsPolicyWithAliasesAndExtraData() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/forms/checkout/send",
                json: """
                    {"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123",\
                    "card_data.exp_date":"12/40","card_data.card_holder":"Jane Doe","customer.ssn":"123-45-6789"},\
                    "extraData":{"order":{"id":"o-1"},"card_data":{"card_holder":"overridden"}}}
                    """)
            #expect(r.status == 200, "\(r.text)")
            let json = try #require(r.json)
            let card = try #require(json["card_data"] as? [String: Any])
            let number = try #require(card["card_number"] as? String)
            #expect(number.hasSuffix("1111") && number != "4111111111111111")
            #expect(card["exp_month"] as? String == "12" && card["exp_year"] as? String == "2040")
            #expect(card["card_holder"] as? String == "Jane Doe")  // field values win over extraData
            #expect((json["order"] as? [String: Any])?["id"] as? String == "o-1")
            #expect(((json["customer"] as? [String: Any])?["ssn"] as? String)?.hasPrefix("tok_sandbox_") == true)
            for raw in ["4111111111111111", "4111 1111 1111 1111", "123-45-6789"] { #expect(!r.text.contains(raw)) }
        }
    }

    @Test func theRequestsPolicyOverridesTheForms() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/forms/checkout/send",
                json: """
                    {"fields":{"card_data.card_number":"4111 1111 1111 1111","card_data.card_cvc":"123",\
                    "card_data.exp_date":"12/40","card_data.card_holder":"Jane Doe","customer.ssn":"123-45-6789"},\
                    "options":{"fieldNameMappingPolicy":"flatJSON"}}
                    """)
            let json = try #require(r.json)
            #expect(json["card_data.card_holder"] as? String == "Jane Doe")
            #expect(json["card_data.exp_month"] as? String == "12")
            #expect(json["card_data"] == nil)
        }
    }

    @Test func invalidSubmissionsGet1001AndNothingIsEchoed() throws {
        try withTestServer(TestService()) { server throws in
            let r = try server.client().request(
                "POST", "/forms/checkout/send", json: #"{"fields":{"card_data.card_number":"4111"}}"#)
            #expect(r.status == 422 && r.errorCode == 1001)
        }
    }
}
