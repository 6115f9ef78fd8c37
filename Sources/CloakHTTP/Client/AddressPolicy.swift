import Foundation

/// Which upstream addresses an egress route may reach without `allow_private`: a vault that
/// forwards revealed card data must not be turned into a way into its own network (SSRF).
/// Refused: loopback, unspecified, private (RFC 1918, RFC 4193), shared (100.64/10), link-local,
/// multicast and broadcast ranges, Teredo, and IPv4 inside IPv6 (mapped, compatible, SIIT, NAT64,
/// 6to4) in those ranges.
public enum AddressPolicy {
    /// Whether `host` is an IPv4 or IPv6 literal rather than a name.
    public static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Whether the numeric `address` is one an egress route reaches only with `allow_private`.
    /// Anything that does not parse counts as private (deny by default).
    public static func isPrivate(_ address: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            let b = withUnsafeBytes(of: v4.s_addr) { Array($0) }
            return isPrivate(ipv4: b)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return true }
        let b = withUnsafeBytes(of: v6) { Array($0) }
        if b[0..<10].allSatisfy({ $0 == 0 }) && ((b[10] == 0xFF && b[11] == 0xFF) || (b[10] == 0 && b[11] == 0)) {
            // ::ffff:a.b.c.d and ::a.b.c.d (also :: and ::1, whose last four bytes are private)
            return isPrivate(ipv4: Array(b[12..<16])) || b[0..<16].dropLast().allSatisfy { $0 == 0 }
        }
        if b[0] == 0xFF { return true }  // multicast
        if b[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return true }  // fec0::/10 site-local (deprecated)
        if b[0] == 0x20 && b[1] == 0x02 { return isPrivate(ipv4: Array(b[2..<6])) }  // 6to4 of a private address
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B {
            // 64:ff9b::/96 (NAT64) embeds an IPv4 address; 64:ff9b:1::/48 is local-use NAT64.
            return (b[4] == 0 && b[5] == 1) || isPrivate(ipv4: Array(b[12..<16]))
        }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0 { return true }  // 2001::/32 Teredo tunnels
        if b[0..<8].allSatisfy({ $0 == 0 }) && b[8] == 0xFF && b[9] == 0xFF && b[10] == 0 && b[11] == 0 {
            return isPrivate(ipv4: Array(b[12..<16]))  // ::ffff:0:a.b.c.d (SIIT)
        }
        return false
    }

    static func isPrivate(ipv4 b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return true
        case (100, 64...127): return true
        case (169, 254): return true
        case (172, 16...31): return true
        case (192, 168): return true
        case (192, 0) where b[2] == 0: return true
        case (192, 88) where b[2] == 99: return true  // 6to4 relay anycast
        case (198, 18...19): return true
        case (224...255, _): return true
        default: return false
        }
    }
}
