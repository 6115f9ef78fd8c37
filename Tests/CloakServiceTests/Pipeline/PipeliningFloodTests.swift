import CloakTesting
import Foundation
import Testing

/// One client pipelining requests without reading the answers (issue 44, defect 1), on every
/// kind of connection a `cloak serve` process takes: plain, TLS, PROXY protocol, TLS behind
/// PROXY protocol, the forward-proxy door, a CONNECT tunnel through it. Reading stops while answers wait to leave, so TCP
/// pushes back: the client cannot send its whole flood, and the process's resident memory
/// stays within a bound (before the fix, everything but the plain listener read on while its
/// answers piled up in user space: a gigabyte in twenty seconds behind PROXY protocol).
@Suite(.serialized, .tags(.racy, .processes, .sockets)) struct PipeliningFloodTests {
    enum Kind: String, CaseIterable, Sendable {
        case plain, tls, proxy, tlsProxy, door, tunnel
    }

    /// Growth of resident memory allowed over the flood (the answers a socket holds, allocator
    /// slack): issue 58's bound; the defect grew by hundreds of megabytes.
    static let allowedGrowth = 16 << 20
    /// What the client may send at most: far beyond the kernel's buffers on loopback.
    static let flood = 48 << 20

    @Test(arguments: Kind.allCases)
    func aClientThatNeverReadsCannotFillTheServersMemory(kind: Kind) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let directory = TemporaryDirectory()
        let doorPort = try CloakNode.freePort()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/flood.db", directory: directory.path, tokenID: "egress",
            scopes: "egress:psp",
            configure: { yaml in
                var yaml = yaml
                if kind == .tls || kind == .tlsProxy {
                    yaml = yaml.replacingOccurrences(
                        of: "  # tls: {cert: /etc/cloak/chain.pem, key: /etc/cloak/key.pem}",
                        with: "  tls: {cert: \"\(certificates.serverCertificate)\", key: \"\(certificates.serverKey)\"}"
                    )
                }
                if kind == .proxy || kind == .tlsProxy {
                    yaml = yaml.replacingOccurrences(
                        of: "  trusted_proxies: []", with: "  trusted_proxies: [\"127.0.0.1/32\"]"
                    )
                    .replacingOccurrences(of: "  proxy_protocol: false", with: "  proxy_protocol: true")
                }
                if kind == .door || kind == .tunnel {
                    yaml += """

                        egress:
                          listen: "127.0.0.1:\(doorPort)"
                          ca: {cert: "\(directory.path)/egress-ca.pem", key: "\(directory.path)/egress-ca-key.pem"}
                          routes:
                            - {id: psp, upstream: "https://psp.example", paths: ["/v1/*"]}

                        """
                }
                return yaml
            },
            ready: kind == .plain
                ? nil : { LoopbackSocket.isListening(kind == .door || kind == .tunnel ? doorPort : $0) })
        defer { node.stop() }
        let before = try #require(node.residentBytes)
        let request =
            switch kind {
            case .door: "GET http://psp.example/v1/x HTTP/1.1\r\nHost: psp.example\r\n\r\n"
            case .tunnel: "GET /readyz HTTP/1.1\r\nHost: psp.example\r\n\r\n"
            default: "GET /elements/v1/cloak.js HTTP/1.1\r\nHost: x\r\n\r\n"
            }
        let credentials = Data("egress:\(CloakNode.token)".utf8).base64EncodedString()
        let flood = try PipeliningFlood(
            port: kind == .door || kind == .tunnel ? doorPort : node.port,
            tls: kind == .tls || kind == .tlsProxy || kind == .tunnel,
            proxyHeader: kind == .proxy || kind == .tlsProxy, request: request, capBytes: Self.flood,
            connect: kind == .tunnel
                ? "CONNECT psp.example:443 HTTP/1.1\r\nHost: psp.example:443\r\n"
                    + "Proxy-Authorization: Basic \(credentials)\r\n\r\n" : nil,
            directory: directory.path)
        defer { flood.stop() }
        var peak = before
        // Until the client stops sending (pushed back, or its cap), watching the server's
        // memory; past the bound the node is stopped rather than left to take the machine's.
        let finished = Poll.until(seconds: 120, every: 20_000) {
            peak = max(peak, node.residentBytes ?? peak)
            return flood.progress().done || peak - before > 4 * Self.allowedGrowth
        }
        // And a while after: what was read is answered (and queued) by now; memory stays flat.
        let settled = flood.progress().sent
        for _ in 0..<50 {
            usleep(20_000)
            peak = max(peak, node.residentBytes ?? peak)
        }
        // The figures, for the record (Benchmarks/README.md quotes them).
        print("flood \(kind): RSS +\((peak - before) >> 10) KiB over \(settled >> 10) KiB sent")
        #expect(finished, "\(kind): the flood neither stalled nor ended")
        #expect(
            peak - before <= Self.allowedGrowth,
            "\(kind): resident memory grew \((peak - before) >> 20) MiB over a flood of \(settled >> 20) MiB")
        #expect(settled < Self.flood, "\(kind): the server read all \(settled >> 20) MiB the client sent")
        // The server still answers others.
        if kind == .plain || kind == .door {
            #expect(RawHTTPClient.waitUntil(port: node.port, path: "/healthz", answers: 200, attempts: 200))
        }
    }

    /// The TLS paths a small-record flood reaches (issue 55, item 1).
    enum TLSPath: String, CaseIterable, Sendable {
        case tls, tlsProxy, tunnel
    }

    /// Growth of resident memory allowed over a small-record flood.
    static let allowedSmallRecordGrowth = 16 << 20

    /// One small TLS record per request, `GET /readyz` (exempt from rate limits), read or not:
    /// OpenSSL's memory BIO once took 16 KiB more from the socket on every resume while one
    /// request at a time was answered, and grew by a hundred megabytes in twenty seconds.
    @Test(arguments: TLSPath.allCases, [false, true])
    func smallRecordsCannotGrowATLSConnectionsMemory(path: TLSPath, reading: Bool) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let doorPort = try CloakNode.freePort()
        let node = try CloakNode(
            store: "sqlite:\(directory.path)/flood.db", directory: directory.path, tokenID: "egress",
            scopes: "egress:psp",
            configure: { yaml in
                var yaml = yaml
                switch path {
                case .tls, .tlsProxy:
                    yaml = yaml.replacingOccurrences(
                        of: "  # tls: {cert: /etc/cloak/chain.pem, key: /etc/cloak/key.pem}",
                        with: "  tls: {cert: \"\(certificates.serverCertificate)\", key: \"\(certificates.serverKey)\"}"
                    )
                    if path == .tlsProxy {
                        yaml = yaml.replacingOccurrences(
                            of: "  trusted_proxies: []", with: "  trusted_proxies: [\"127.0.0.1/32\"]"
                        )
                        .replacingOccurrences(of: "  proxy_protocol: false", with: "  proxy_protocol: true")
                    }
                case .tunnel:
                    yaml += """

                        egress:
                          listen: "127.0.0.1:\(doorPort)"
                          ca: {cert: "\(directory.path)/egress-ca.pem", key: "\(directory.path)/egress-ca-key.pem"}
                          routes:
                            - {id: psp, upstream: "https://psp.example", paths: ["/v1/*"]}

                        """
                }
                return yaml
            },
            ready: { LoopbackSocket.isListening(path == .tunnel ? doorPort : $0) })
        defer { node.stop() }
        let before = try #require(node.residentBytes)
        let credentials = Data("egress:\(CloakNode.token)".utf8).base64EncodedString()
        let flood = try PipeliningFlood(
            port: path == .tunnel ? doorPort : node.port, tls: true, proxyHeader: path == .tlsProxy,
            request: "GET /readyz HTTP/1.1\r\nHost: psp.example\r\n\r\n", capBytes: 64 << 20, records: .small,
            reading: reading,
            connect: path == .tunnel
                ? "CONNECT psp.example:443 HTTP/1.1\r\nHost: psp.example:443\r\n"
                    + "Proxy-Authorization: Basic \(credentials)\r\n\r\n" : nil,
            seconds: 8, directory: directory.path)
        defer { flood.stop() }
        var peak = before
        let finished = Poll.until(seconds: 120, every: 20_000) {
            peak = max(peak, node.residentBytes ?? peak)
            return flood.progress().done || peak - before > 4 * Self.allowedSmallRecordGrowth
        }
        for _ in 0..<50 {
            usleep(20_000)
            peak = max(peak, node.residentBytes ?? peak)
        }
        let sent = flood.progress().sent
        // The figures, for the record (Benchmarks/README.md quotes them).
        print(
            "small-record flood \(path) reading \(reading): RSS +\((peak - before) >> 10) KiB over \(sent >> 10) KiB sent"
        )
        #expect(finished, "\(path): the flood neither stalled nor ended")
        #expect(sent > 1 << 20, "\(path): the flood sent only \(sent) bytes")
        #expect(
            peak - before <= Self.allowedSmallRecordGrowth,
            "\(path) reading \(reading): resident memory grew \((peak - before) >> 20) MiB over \(sent >> 20) MiB"
        )
    }
}
