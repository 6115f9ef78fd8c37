import CloakService
import CloakTesting
import Foundation
import Testing

/// Issue 57 item 1: the shipped checkout takes every brand it accepts from anonymous callers
/// (Elements, CloakCollect), and a form whose alias format cannot is refused by the configuration.
@Suite(.tags(.sockets)) struct ShippedFormBrandTests {
    /// Luhn-valid test numbers of every built-in length that matters: Visa 13/16/19, Mastercard,
    /// Amex 15, Discover, Diners 14, JCB, UnionPay 19, Maestro 12.
    static let cards = [
        ("visa", "4222222222222"), ("visa", "4111111111111111"), ("visa", "4111111111111111110"),
        ("mastercard", "5555555555554444"), ("amex", "378282246310005"), ("discover", "6011111111111117"),
        ("dinersClub", "36227206271667"), ("jcb", "3530111333300000"), ("unionpay", "6200000000000005"),
        ("unionpay", "6212345678901265"), ("unionpay", "6212345678901234569"), ("maestro", "675964982648"),
    ]

    @Test func theShippedCheckoutAliasesEveryBrandForAnAnonymousCaller() throws {
        try withTestServer(TestService()) { server throws in
            for (brand, number) in Self.cards {
                let cvc = brand == "amex" ? "1234" : "123"
                let fields =
                    #"{"fields":{"card_data.card_number":"\#(number)","card_data.card_cvc":"\#(cvc)","card_data.exp_date":"12/30","card_data.card_holder":"Jane Doe"}}"#
                let answer = try server.client().request("POST", "/forms/checkout/tokens", json: fields)
                #expect(answer.status == 200, "\(brand) \(number.count) digits: \(answer.text)")
                let alias = try #require(answer.json?["card_data.card_number"] as? String, "\(brand): \(answer.text)")
                let digits = alias.filter(\.isNumber)
                #expect(digits.count == number.count && digits.suffix(4) == number.suffix(4) && digits != number)
            }
        }
    }

    static func yaml(format: String, openTokenize: Bool = true, accepted: String? = nil) -> String {
        """
        auth: {open_tokenize: \(openTokenize)}
        forms:
          shop:
            \(accepted.map { "card_brands: {accepted: [\($0)]}" } ?? "")
            fields:
              - {name: number, type: cardNumber, tokenization: {format: \(format), storage: PERSISTENT}}
              - {name: ssn, type: ssn, tokenization: {format: UUID, storage: PERSISTENT}}
        """
    }

    @Test func aFormWhoseFormatCannotServeABrandItAcceptsIsRefusedWithTheFixNamed() throws {
        do {
            _ = try ServiceConfiguration.parse(yaml: Self.yaml(format: "FPE_SIX_T_FOUR"))
            Issue.record("FPE_SIX_T_FOUR on an open form that takes Amex was accepted")
        } catch {
            let text = error.issues.map(\.description).joined(separator: "\n")
            #expect(text.contains("forms.shop.fields[0].tokenization.format"), "\(text)")
            #expect(text.contains("15 digits (") && text.contains("amex") && text.contains("dinersClub"), "\(text)")
            #expect(text.contains("FPE_T_FOUR") && text.contains("auth.open_tokenize"), "\(text)")
        }
        // The same form for token holders only, or for brands of 16 digits and more, is served.
        _ = try ServiceConfiguration.parse(yaml: Self.yaml(format: "FPE_SIX_T_FOUR", openTokenize: false))
        _ = try ServiceConfiguration.parse(
            yaml: Self.yaml(format: "FPE_SIX_T_FOUR", accepted: "mastercard, discover, jcb"))
        _ = try ServiceConfiguration.parse(yaml: Self.yaml(format: "FPE_T_FOUR"))
        // An SSN's five free digits are too few for anonymous callers; a CVC's three always are.
        for (field, format) in [("ssn", "FPE_SSN_T_FOUR"), ("cvc", "NUM_LENGTH_PRESERVING")] {
            let yaml = "forms: {f: {fields: [{name: x, type: \(field), tokenization: {format: \(format)}}]}}"
            #expect(throws: ConfigurationError.self) { try ServiceConfiguration.parse(yaml: yaml) }
        }
    }

    @Test func theShippedConfigurationPassesItsOwnCheck() throws {
        let c = try ServiceConfiguration.parse(yaml: TestServer.shippedConfiguration)
        #expect(c.forms["checkout"] != nil && c.forms["identity"] != nil)
    }
}
