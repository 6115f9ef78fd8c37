import CloakCore
import Testing

/// The names a card's security code goes by (issue 76): never in a group, never imported.
struct SecurityCodeNameTests {
    @Test(arguments: [
        "cvc", "CVV", "cvv2", "CVC2", "csc", "card_cvc", "cc-cvv", "cvc_number", "ccv", "security-code",
        "Security Code", "card.security_code", "cardCode", "cvn", "cvd", "cav2",
    ])
    func namesOfASecurityCode(_ name: String) {
        #expect(SecurityCodeName.matches(name), "\(name)")
    }

    @Test(arguments: [
        "id", "cid", "customer_id", "card_number", "exp_date", "name", "code", "discount_code", "cscs_member",
        "data[1]", "acid",
    ])
    func otherNames(_ name: String) {
        #expect(!SecurityCodeName.matches(name), "\(name)")
    }
}
