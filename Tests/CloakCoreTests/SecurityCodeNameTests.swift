import CloakCore
import Testing

/// The names a card's security code goes by (issue 76): never in a group, never imported.
struct SecurityCodeNameTests {
    @Test(arguments: [
        "cvc", "CVV", "cvv2", "CVC2", "csc", "card_cvc", "cc-cvv", "cvc_number", "ccv", "security-code",
        "Security Code", "card.security_code", "cardCode", "cvn", "cvd", "cav2",
        // Not ASCII: folded as Unicode lower-cases them (a dotted capital I, the Kelvin sign).
        "SECUR\u{130}TY_CODE", "card\u{212A}\u{2212}cvc", "cvv\u{00A0}2", "карта_cvc",
    ])
    func namesOfASecurityCode(_ name: String) {
        #expect(SecurityCodeName.matches(name), "\(name)")
    }

    @Test(arguments: [
        "id", "cid", "customer_id", "card_number", "exp_date", "name", "code", "discount_code", "cscs_member",
        "data[1]", "acid", "\u{130}d",
    ])
    func otherNames(_ name: String) {
        #expect(!SecurityCodeName.matches(name), "\(name)")
    }
}
