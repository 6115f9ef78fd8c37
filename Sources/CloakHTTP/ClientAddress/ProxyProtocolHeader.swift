/// The HAProxy PROXY protocol header (versions 1 and 2) a balancer sends before a connection's
/// first byte, read from the bytes received so far. Pure: nothing is read or written here.
///
/// - v1: `PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n` or `PROXY UNKNOWN …\r\n`, at most
///   107 bytes.
/// - v2: the 12-byte signature, version and command (`LOCAL` or `PROXY`), family and protocol,
///   a 16-bit length, then the addresses and TLVs (skipped). Lengths past ``maxV2Length`` are refused.
///
/// `LOCAL` (a balancer's own health check) and unknown families are served as from the peer.
public enum ProxyProtocolHeader {
    public enum Parsed: Sendable, Equatable {
        /// Not enough bytes yet.
        case needMore
        /// The client's address, and the header's length (to drop from the stream).
        case proxied(source: String, length: Int)
        /// `LOCAL` (the balancer's own connection) or a PROXY header with an unknown family (a
        /// client the balancer could not name): served as from the peer, whose forwarding
        /// headers are not believed.
        case local(length: Int)
        /// Not a valid header: the connection is closed. The reason never quotes the bytes.
        case invalid(String)
    }

    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    static let v1Prefix = Array("PROXY ".utf8)
    static let v1MaxLength = 107
    public static let maxV2Length = 2_048

    public static func parse(_ bytes: some Collection<UInt8>) -> Parsed {
        let b = Array(bytes.prefix(16 + maxV2Length))
        guard let first = b.first else { return .needMore }
        if first == v2Signature[0] {
            let n = min(b.count, 12)
            guard Array(b[0..<n]) == Array(v2Signature[0..<n]) else { return .invalid("not a PROXY protocol header") }
            return b.count < 16 ? .needMore : parseV2(b)
        }
        let n = min(b.count, v1Prefix.count)
        guard Array(b[0..<n]) == Array(v1Prefix[0..<n]) else { return .invalid("not a PROXY protocol header") }
        return parseV1(b)
    }

    private static func parseV1(_ b: [UInt8]) -> Parsed {
        guard let lf = b.prefix(v1MaxLength).firstIndex(of: 0x0A) else {
            return b.count >= v1MaxLength ? .invalid("a PROXY v1 line longer than 107 bytes") : .needMore
        }
        guard lf >= 1, b[lf - 1] == 0x0D else { return .invalid("a PROXY v1 line not ended by CRLF") }
        guard let line = String(validating: b[0..<(lf - 1)], as: UTF8.self) else {
            return .invalid("a PROXY v1 line that is not text")
        }
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        let length = lf + 1
        guard fields.count >= 2 else { return .invalid("a PROXY v1 line without a family") }
        switch fields[1] {
        case "UNKNOWN":
            return .local(length: length)
        case "TCP4", "TCP6":
            guard fields.count == 6, let source = IPAddress(fields[2]), IPAddress(fields[3]) != nil,
                source.isIPv4 == (fields[1] == "TCP4"), isPort(fields[4]), isPort(fields[5])
            else { return .invalid("a PROXY v1 line with malformed addresses or ports") }
            return .proxied(source: source.description, length: length)
        default:
            return .invalid("a PROXY v1 line with an unknown family")
        }
    }

    private static func isPort(_ s: Substring) -> Bool {
        !s.isEmpty && s.count <= 5 && s.allSatisfy { $0.isASCII && $0.isNumber } && (s.count == 1 || s.first != "0")
            && Int(s)! <= 65_535
    }

    private static func parseV2(_ b: [UInt8]) -> Parsed {
        let versionCommand = b[12], family = b[13]
        let length = Int(b[14]) << 8 | Int(b[15])
        guard versionCommand >> 4 == 2 else { return .invalid("a PROXY v2 header of another version") }
        guard length <= maxV2Length else { return .invalid("a PROXY v2 header longer than 2 KiB") }
        guard b.count >= 16 + length else { return .needMore }
        let total = 16 + length
        switch versionCommand & 0x0F {
        case 0x0: return .local(length: total)  // LOCAL: the balancer's own connection
        case 0x1: break  // PROXY
        default: return .invalid("a PROXY v2 header with an unknown command")
        }
        switch family {
        case 0x11, 0x12:  // TCP or UDP over IPv4
            guard length >= 12 else { return .invalid("a PROXY v2 header too short for IPv4 addresses") }
            let source = IPAddress(bytes: Array(repeating: 0, count: 10) + [0xFF, 0xFF] + Array(b[16..<20]))
            return .proxied(source: source.description, length: total)
        case 0x21, 0x22:  // TCP or UDP over IPv6
            guard length >= 36 else { return .invalid("a PROXY v2 header too short for IPv6 addresses") }
            return .proxied(source: IPAddress(bytes: Array(b[16..<32])).description, length: total)
        default:
            return .local(length: total)  // UNSPEC, UNIX sockets: served as from the peer
        }
    }
}
