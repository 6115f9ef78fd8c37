import CloakHTTP
import Testing

/// Which addresses an egress route reaches only with `allow_private`.
struct AddressPolicyTests {
    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "::1", "::", "fe80::1", "fc00::1",
        "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "ff02::1", "2002:a00:1::1", "64:ff9b::a00:1",
        "64:ff9b:1::8.8.8.8", "2001:0:4136:e378::1", "::ffff:0:a00:1", "192.88.99.1", "not-an-address", "",
    ])
    func privateAddressesAreRefused(address: String) {
        #expect(AddressPolicy.isPrivate(address))
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8",
        "2002:808:808::1",
    ])
    func publicAddressesPass(address: String) {
        #expect(!AddressPolicy.isPrivate(address))
    }

    @Test func literalsAreTold() {
        #expect(AddressPolicy.isLiteral("10.0.0.1") && AddressPolicy.isLiteral("::1"))
        #expect(!AddressPolicy.isLiteral("api.stripe.com") && !AddressPolicy.isLiteral("localhost"))
    }
}
