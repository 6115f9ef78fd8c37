import Glibc

/// An IPv4 or IPv6 address as 16 bytes (IPv4 as IPv4-mapped IPv6, so `1.2.3.4` and
/// `::ffff:1.2.3.4` are the same address). Parsed with `inet_pton`, shown in its usual text.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
        // inet_pton reads a C string: a NUL would end it early ("1.2.3.4\0junk").
        guard !text.isEmpty, text.utf8.count <= 64, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(text), &v4) == 1 {
            bytes = Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: v4.s_addr) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, String(text), &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: v6) { Array($0) }
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// IPv4 (or IPv4-mapped IPv6).
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    public var description: String {
        if isIPv4 { return bytes[12..<16].map(String.init).joined(separator: ".") }
        var v6 = in6_addr()
        withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
        return Sockets.numeric(AF_INET6, v6) ?? "::"
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    public let base: IPAddress
    /// Prefix length over the 16-byte form (an IPv4 `/24` is 96 + 24).
    public let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber),
                parts[1].count <= 3, let n = Int(parts[1]), n <= width
            else { return nil }
            length = n
        }
        prefix = length + (address.isIPv4 ? 96 : 0)
        base = IPAddress(bytes: Self.masked(address.bytes, prefix))
    }

    public func contains(_ address: IPAddress) -> Bool { Self.masked(address.bytes, prefix) == base.bytes }

    public var description: String { "\(base)/\(base.isIPv4 ? prefix - 96 : prefix)" }

    static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(max(prefix - index * 8, 0), 8)
            return bits == 8 ? byte : byte & ~(UInt8(0xFF) >> bits)
        }
    }
}

/// `server.trusted_proxies`: the balancers whose word about the client address is taken.
public struct TrustedProxies: Sendable, Equatable {
    public let networks: [IPNetwork]

    public init(_ networks: [IPNetwork] = []) { self.networks = networks }

    public var isEmpty: Bool { networks.isEmpty }

    public func contains(_ address: IPAddress) -> Bool { networks.contains { $0.contains(address) } }

    /// Whether the numeric `address` is a trusted proxy (text that is no address is not).
    public func contains(_ address: String) -> Bool {
        guard !networks.isEmpty, let parsed = IPAddress(address) else { return false }
        return contains(parsed)
    }
}
