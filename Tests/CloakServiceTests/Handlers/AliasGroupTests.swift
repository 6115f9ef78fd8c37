import CloakTesting
import Foundation
import Testing

/// `POST /aliases` with several values stores them as one group (issue 76): its id shown only
/// to callers who may reveal, a card's security code never in it.
@Suite struct AliasGroupTests {
    static func create(_ items: String, token: String, on server: TestService) throws -> RawHTTPClient.Response {
        try server.client().request(
            "POST", "/aliases", json: #"{"data":[\#(items)]}"#, headers: VaultAPITests.bearer(token))
    }

    static let row = """
        {"value":"4111111111111111","format":"FPE_SIX_T_FOUR","field":"card_number"},\
        {"value":"12/29","field":"exp_date"},{"value":"Ada Lovelace","field":"name"}
        """

    @Test func severalValuesFormOneGroupShownToWhoMayReveal() throws {
        try withTestServer(TestService()) { server throws in
            let full = try Self.create(Self.row, token: TestServer.fullToken, on: server)
            #expect(full.status == 201, "\(full.text)")
            let group = try #require(full.json?["group"] as? String)
            #expect(group.hasPrefix("grp_"))
            // A caller who may not reveal gets the SDK's answer: the same values, no group.
            let createOnly = try Self.create(Self.row, token: TestServer.createOnlyToken, on: server)
            #expect(createOnly.status == 201 && createOnly.json?["group"] == nil, "\(createOnly.text)")
            #expect(!createOnly.text.contains("grp_"))
            // Items without a field are named by their place; a second call is a second group.
            let unnamed = try Self.create(
                #"{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"},{"value":"12/29"}"#,
                token: TestServer.fullToken, on: server)
            let other = try #require(unnamed.json?["group"] as? String)
            #expect(other != group)
        }
    }

    @Test func aSecurityCodeNeverJoinsAGroup() throws {
        try withTestServer(TestService()) { server throws in
            // With the security code left out, one value is left: no group.
            for name in ["cvv", "CVC", "card_cvc", "security-code"] {
                let r = try Self.create(
                    #"""
                    {"value":"4111111111111111","format":"FPE_SIX_T_FOUR","field":"card_number"},\#
                    {"value":"123","storage":"VOLATILE","field":"\#(name)"}
                    """#, token: TestServer.fullToken, on: server)
                #expect(r.status == 201, "\(name): \(r.text)")
                #expect(r.json?["group"] == nil, "\(name)")
            }
        }
    }

    @Test func anUnnamedVolatileValueJoinsNoGroupAndFormClassifiersAreTheForms() throws {
        try withTestServer(TestService()) { server throws in
            let card = #"{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}"#
            let r = try Self.create(
                card + #",{"value":"123","storage":"VOLATILE"}"#, token: TestServer.fullToken, on: server)
            #expect(r.status == 201 && r.json?["group"] == nil, "\(r.text)")
            // A value an export of a form would take as the form's: only its submissions set it.
            let forged = try Self.create(
                #"{"value":"4111111111111111","classifiers":["form:card_import"]}"#, token: TestServer.fullToken,
                on: server)
            #expect(forged.status == 400 && forged.errorCode == 1002, "\(forged.text)")
        }
    }

    static let malformedFields: [(String, String)] = [
        ("a number", #"{"value":"x","field":7}"#),
        ("empty", #"{"value":"x","field":""}"#),
        ("a space", #"{"value":"x","field":"card number"}"#),
        ("too long", #"{"value":"x","field":"\#(String(repeating: "f", count: 65))"}"#),
        ("a card number", #"{"value":"x","field":"n4111111111111111"}"#),
        ("named twice", #"{"value":"x","field":"a"},{"value":"y","field":"a"}"#),
    ]

    @Test(arguments: malformedFields.indices)
    func aMalformedFieldIsRefusedWithNothingStored(index: Int) throws {
        let (name, items) = Self.malformedFields[index]
        try withTestServer(TestService()) { server throws in
            let r = try Self.create(items, token: TestServer.fullToken, on: server)
            #expect(r.status == 400 && r.errorCode == 1002, "\(name): \(r.text)")
            #expect(!r.text.contains("4111111111111111"), "\(name) echoed a card")
        }
    }
}
