import Testing

@testable import CloakHTTP

/// The client address behind trusted proxies (issue 22): ranges, Forwarded / X-Forwarded-For,
/// and the PROXY protocol header, without I/O.
@Suite struct ClientAddressTests {
    static let trusted = TrustedProxies([IPNetwork("10.0.0.0/8")!, IPNetwork("fd00::/8")!, IPNetwork("127.0.0.1")!])

    @Test func networksParseAndContain() {
        #expect(IPNetwork("10.0.0.0/8")!.contains(IPAddress("10.200.3.4")!))
        #expect(!IPNetwork("10.0.0.0/8")!.contains(IPAddress("11.0.0.1")!))
        #expect(IPNetwork("10.0.0.0/8")!.contains(IPAddress("::ffff:10.1.2.3")!))  // IPv4-mapped is the same address
        #expect(IPNetwork("fd00::/8")!.contains(IPAddress("fd12::1")!))
        #expect(IPNetwork("192.168.1.7")!.contains(IPAddress("192.168.1.7")!))
        #expect(!IPNetwork("192.168.1.7")!.contains(IPAddress("192.168.1.8")!))
        #expect(IPNetwork("0.0.0.0/0")!.contains(IPAddress("203.0.113.9")!))
        #expect(IPNetwork("10.1.2.3/8")!.description == "10.0.0.0/8")
        for bad in [
            "", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0/8", "host/8", "10.0.0.0/8/8", "1.2.3.4/ 8",
        ] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
    }

    static func resolve(
        _ peer: String, _ headers: [(String, String)],
        header: ForwardedClient.Header = .xForwardedFor
    ) -> ForwardedClient.Resolution {
        ForwardedClient.resolve(
            peer: peer, headers: headers.map { (name: $0.0, value: $0.1) }, trusted: trusted, header: header)
    }

    @Test func theRightMostUntrustedHopIsTheClient() {
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", "203.0.113.7")]).address == "203.0.113.7")
        // A client's own X-Forwarded-For is to the left of what the proxies appended.
        #expect(
            Self.resolve("10.0.0.5", [("X-Forwarded-For", "1.1.1.1, 203.0.113.7, 10.0.0.9")]).address == "203.0.113.7")
        #expect(
            Self.resolve("10.0.0.5", [("X-Forwarded-For", "1.1.1.1"), ("x-forwarded-for", "203.0.113.7")]).address
                == "203.0.113.7")
        // Every hop trusted: the left-most.
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", "10.0.0.1, 10.0.0.2")]).address == "10.0.0.1")
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", "2001:db8::1")]).address == "2001:db8::1")
    }

    @Test func whatAClientWroteLeftOfItsAddressIsNeverRead() {
        // Junk, too many hops or too many bytes to the left cannot push the request onto the peer.
        for left in [
            "x", ",,,,", String(repeating: "1.2.3.4,", count: 40), String(repeating: " ", count: 3_000), "\u{0}",
        ] {
            #expect(
                Self.resolve("10.0.0.5", [("X-Forwarded-For", left + ", 203.0.113.7")])
                    == .init(address: "203.0.113.7", problem: nil))
        }
    }

    @Test func anUntrustedPeerIsItsOwnClientWhateverItSays() {
        #expect(
            Self.resolve("203.0.113.50", [("X-Forwarded-For", "1.2.3.4")])
                == .init(address: "203.0.113.50", problem: nil))
        #expect(
            Self.resolve("203.0.113.50", [("Forwarded", "for=1.2.3.4")], header: .forwarded).address == "203.0.113.50")
        #expect(
            ForwardedClient.resolve(
                peer: "10.0.0.5", headers: [(name: "X-Forwarded-For", value: "1.2.3.4")],
                trusted: TrustedProxies()
            ).address == "10.0.0.5")
    }

    @Test func onlyTheConfiguredHeaderIsRead() {
        // A proxy that appends X-Forwarded-For passes a client's own Forwarded through: never read.
        #expect(
            Self.resolve("10.0.0.5", [("Forwarded", "for=198.51.100.77"), ("X-Forwarded-For", "203.0.113.7")]).address
                == "203.0.113.7")
        #expect(Self.resolve("10.0.0.5", [("Forwarded", "for=198.51.100.77")]).address == "10.0.0.5")
        // And the other way round.
        #expect(
            Self.resolve(
                "10.0.0.5",
                [
                    ("Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"),
                    ("X-Forwarded-For", "9.9.9.9"),
                ], header: .forwarded
            ).address == "192.0.2.60")
        #expect(
            Self.resolve("10.0.0.5", [("Forwarded", #"for="[2001:db8:cafe::17]:4711""#)], header: .forwarded).address
                == "2001:db8:cafe::17")
        #expect(
            Self.resolve("10.0.0.5", [("Forwarded", #"For="192.0.2.43:80", for=10.0.0.3"#)], header: .forwarded).address
                == "192.0.2.43")
    }

    @Test(arguments: [
        ("X-Forwarded-For", "not-an-address"), ("X-Forwarded-For", "1.2.3.4, "), ("Forwarded", "for=unknown"),
        ("Forwarded", "for=_hidden"), ("Forwarded", "proto=https"), ("X-Forwarded-For", "1.2.3.4\u{0}"),
        ("Forwarded", #"for="[2001:db8::1""#), ("X-Forwarded-For", "203.0.113.7, junk, 10.0.0.9"),
    ])
    func aHopTheWalkReachesThatIsNoAddressIsServedAsThePeer(name: String, value: String) {
        let header: ForwardedClient.Header = name == "Forwarded" ? .forwarded : .xForwardedFor
        #expect(
            Self.resolve("10.0.0.5", [(name, value)], header: header) == .init(address: "10.0.0.5", problem: .malformed)
        )
    }

    @Test func tooManyTrustedHopsOrBytesAreServedAsThePeer() {
        let many = (0..<33).map { "10.0.0.\($0)" }.joined(separator: ",")
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", many)]).problem == .tooManyHops)
        let thirtyTwo = (0..<32).map { "10.0.0.\($0)" }.joined(separator: ",")
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", thirtyTwo)]).address == "10.0.0.0")
        let big = String(repeating: " ", count: 2_100) + "1.2.3.4"
        #expect(Self.resolve("10.0.0.5", [("X-Forwarded-For", big)]) == .init(address: "10.0.0.5", problem: .oversized))
    }

    // MARK: PROXY protocol

    static func v2(command: UInt8 = 0x21, family: UInt8 = 0x11, body: [UInt8]) -> [UInt8] {
        ProxyProtocolHeader.v2Signature + [command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    @Test func versionOneNamesTheSourceAndItsLength() {
        let line = Array("PROXY TCP4 198.51.100.22 203.0.113.7 35646 80\r\n".utf8)
        #expect(
            ProxyProtocolHeader.parse(line + Array("GET / HTTP/1.1\r\n".utf8))
                == .proxied(source: "198.51.100.22", length: line.count))
        let six = Array("PROXY TCP6 2001:db8::1 2001:db8::2 1 443\r\n".utf8)
        #expect(ProxyProtocolHeader.parse(six) == .proxied(source: "2001:db8::1", length: six.count))
        let unknown = Array("PROXY UNKNOWN\r\n".utf8)
        #expect(ProxyProtocolHeader.parse(unknown) == .local(length: unknown.count))
        // Cut anywhere before its end: more is needed.
        for cut in 0..<line.count { #expect(ProxyProtocolHeader.parse(line.prefix(cut)) == .needMore, "\(cut)") }
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\n", "PROXY TCP4 198.51.100.22 203.0.113.7 35646 80\n",
        "PROXY TCP4 300.1.1.1 203.0.113.7 1 2\r\n",
        "PROXY TCP4 2001:db8::1 203.0.113.7 1 2\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 99999 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
        "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",
        "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 " + String(repeating: "1", count: 120) + "\r\n",
    ])
    func malformedVersionOneIsRefused(text: String) {
        guard case .invalid = ProxyProtocolHeader.parse(Array(text.utf8)) else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
    }

    @Test func versionTwoNamesTheSourceSkipsTLVsAndServesLocalAsThePeer() {
        // with a TLV
        let v4 = Self.v2(body: [198, 51, 100, 22, 203, 0, 113, 7, 0x8B, 0x3E, 0, 80] + [0x04, 0, 2, 0xAA, 0xBB])
        #expect(ProxyProtocolHeader.parse(v4 + [0x47]) == .proxied(source: "198.51.100.22", length: v4.count))
        let source6: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1]
        let v6 = Self.v2(family: 0x21, body: source6 + Array(repeating: 0, count: 16) + [0, 1, 0, 2])
        #expect(ProxyProtocolHeader.parse(v6) == .proxied(source: "2001:db8::1", length: v6.count))
        let local = Self.v2(command: 0x20, family: 0x00, body: [])
        #expect(ProxyProtocolHeader.parse(local) == .local(length: 16))
        let unix = Self.v2(family: 0x31, body: Array(repeating: 0, count: 216))
        #expect(ProxyProtocolHeader.parse(unix) == .local(length: unix.count))
        for cut in 0..<v4.count { #expect(ProxyProtocolHeader.parse(v4.prefix(cut)) == .needMore, "\(cut)") }
    }

    @Test func malformedVersionTwoIsRefused() {
        let short = Self.v2(body: [1, 2, 3])
        let wrongVersion = ProxyProtocolHeader.v2Signature + [0x11, 0x11, 0, 12] + Array(repeating: 0, count: 12)
        let badCommand = Self.v2(command: 0x2F, body: Array(repeating: 0, count: 12))
        let huge = ProxyProtocolHeader.v2Signature + [0x21, 0x11, 0x10, 0x00]
        var badSignature = Self.v2(body: Array(repeating: 0, count: 12))
        badSignature[5] = 0x0A
        for header in [short, wrongVersion, badCommand, huge, badSignature] {
            guard case .invalid = ProxyProtocolHeader.parse(header) else {
                Issue.record("accepted \(header)")
                continue
            }
        }
    }
}
