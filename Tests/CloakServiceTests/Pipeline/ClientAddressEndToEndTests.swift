import CloakTesting
import Foundation
import Testing

/// Issue 22, the real client address: Cloak behind a real haproxy (the Debian package) on
/// loopback, once with `X-Forwarded-For` and once with PROXY protocol v2. Two clients, from
/// 127.0.0.2 and 127.0.0.3, get separate rate buckets and are named in the access log; headers and
/// PROXY headers from anyone who is not a trusted proxy count for nothing.
/// Whether the Debian package's haproxy is here (the tests through it are skipped without it).
private let haproxyIsInstalled = ClientAddressEndToEndTests.haproxy != nil

@Suite(.serialized, .tags(.sockets, .processes)) struct ClientAddressEndToEndTests {
    static let haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The test configuration with an anonymous bucket of two requests, trusting 127.0.0.1.
    static func server(proxyProtocol: Bool, trusted: String = "127.0.0.1/32") throws -> TestServer {
        let yaml = TestServer.configurationWithTokens
            .replacingOccurrences(
                of: "anonymous: {requests_per_minute: 10000000, burst: 1000000}",
                with: "anonymous: {requests_per_minute: 1, burst: 2}"
            )
            .replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"\(trusted)\"] ")
            .replacingOccurrences(of: "  proxy_protocol: false ", with: "  proxy_protocol: \(proxyProtocol) ")
        return try TestServer(yaml: yaml)
    }

    /// haproxy on a free loopback port in front of `backend`, in the foreground until `stop()`.
    final class Balancer {
        private(set) var port = 0
        private(set) var process = Process()
        let directory = TemporaryDirectory()

        /// haproxy on a port picked ahead; when something took it meanwhile haproxy exits at once,
        /// and another port is tried.
        init(backend: Int, proxyProtocol: Bool) throws {
            for _ in 0..<5 {
                port = freeLoopbackPort()
                process = Process()
                try start(backend: backend, proxyProtocol: proxyProtocol)
                var up = false
                for _ in 0..<200 where !up && process.isRunning {
                    up = LoopbackSocket.isListening(port)
                    if !up { Thread.sleep(forTimeInterval: 0.025) }
                }
                if up { return }
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
            }
            throw CocoaError(.executableLoad)
        }

        private func start(backend: Int, proxyProtocol: Bool) throws {
            let server =
                proxyProtocol
                ? "server cloak 127.0.0.1:\(backend) send-proxy-v2 check-send-proxy check inter 1s"
                : "server cloak 127.0.0.1:\(backend) check inter 1s"
            let config = """
                global
                  maxconn 256
                defaults
                  mode http
                  timeout connect 5s
                  timeout client 10s
                  timeout server 10s
                frontend front
                  bind 127.0.0.1:\(port)
                  \(proxyProtocol ? "" : "option forwardfor")
                  default_backend nodes
                backend nodes
                  option httpchk GET /readyz
                  \(server)

                """
            let file = "\(directory.path)/haproxy.cfg"
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            process.executableURL = URL(
                fileURLWithPath: try #require(ClientAddressEndToEndTests.haproxy, "apt-get install haproxy"))
            process.arguments = ["-db", "-f", file]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
            directory.remove()
        }
    }

    /// Status of a validate request sent by curl from `source` through `port`.
    static func validate(from source: String, port: Int) throws -> Int {
        let r = try EgressFixture.run(
            "curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", source, "-X", "POST",
                "http://127.0.0.1:\(port)/forms/checkout/validate", "-d", #"{"fields":{}}"#,
            ])
        return Int(r.out) ?? -1
    }

    @Test(.enabled(if: haproxyIsInstalled, "needs haproxy (apt-get install haproxy)"), arguments: [false, true])
    func twoClientsBehindHaproxyGetTheirOwnBuckets(proxyProtocol: Bool) throws {
        try withTestServer(Self.server(proxyProtocol: proxyProtocol)) { server throws in
            let balancer = try Balancer(backend: server.port, proxyProtocol: proxyProtocol)
            defer { balancer.stop() }
            #expect(RawHTTPClient.waitUntil(port: balancer.port, path: "/healthz"))
            let a = try (0..<3).map { _ in try Self.validate(from: "127.0.0.2", port: balancer.port) }
            let b = try (0..<3).map { _ in try Self.validate(from: "127.0.0.3", port: balancer.port) }
            #expect(a == [200, 200, 429], "proxy protocol \(proxyProtocol): \(a)")
            #expect(b == [200, 200, 429], "proxy protocol \(proxyProtocol): \(b)")
            let lines = server.logs.lines.filter {
                $0.contains(#""msg":"request""#) && $0.contains(#""method":"POST""#)
            }
            #expect(lines.filter { $0.contains(#""client":"127.0.0.2""#) }.count == 3)
            #expect(lines.filter { $0.contains(#""client":"127.0.0.3""#) }.count == 3)
        }
    }

    @Test(.enabled(if: haproxyIsInstalled, "needs haproxy (apt-get install haproxy)"))
    func aClientsOwnForwardingHeadersThroughHaproxyDoNotMoveIt() throws {
        try withTestServer(Self.server(proxyProtocol: false)) { server throws in
            let balancer = try Balancer(backend: server.port, proxyProtocol: false)
            defer { balancer.stop() }
            #expect(RawHTTPClient.waitUntil(port: balancer.port, path: "/healthz"))
            // A new made-up address each time, in either header, and junk that would spoil the list.
            let spoofs = [
                ("Forwarded", "for=198.51.100.1"), ("Forwarded", "for=198.51.100.2"), ("X-Forwarded-For", ",,,,junk"),
            ]
            let statuses = try spoofs.map { name, value in
                let r = try EgressFixture.run(
                    "curl",
                    [
                        "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", "127.0.0.2", "-X", "POST", "-H",
                        "\(name): \(value)",
                        "http://127.0.0.1:\(balancer.port)/forms/checkout/validate", "-d", #"{"fields":{}}"#,
                    ])
                return Int(r.out) ?? -1
            }
            #expect(statuses == [200, 200, 429])  // one bucket: 127.0.0.2's
            #expect(!server.logs.text.contains("198.51.100"))
        }
    }

    @Test func forwardedHeadersFromAnUntrustedPeerCountForNothing() throws {
        try withTestServer(Self.server(proxyProtocol: false, trusted: "10.0.0.0/8")) { server throws in
            let statuses = try (0..<3).map { i in
                try server.client().request(
                    "POST", "/forms/checkout/validate", json: #"{"fields":{}}"#,
                    headers: [("X-Forwarded-For", "198.51.100.\(i)"), ("Forwarded", "for=198.51.100.\(i)")]
                ).status
            }
            #expect(statuses == [200, 200, 429])  // one bucket: the peer's
            #expect(server.logs.text.contains(#""client":"127.0.0.1""#) && !server.logs.text.contains("198.51.100"))
        }
    }

    @Test func malformedForwardingFromATrustedProxyIsServedAsThePeer() throws {
        try withTestServer(Self.server(proxyProtocol: false)) { server throws in
            for value in [String(repeating: "1.2.3.4,", count: 40), String(repeating: " ", count: 3_000), "garbage"] {
                let r = try server.client().request("GET", "/healthz", headers: [("X-Forwarded-For", value)])
                #expect(r.status == 200)
            }
            #expect(server.logs.text.contains(#""client":"127.0.0.1""#))
        }
    }

    @Test func proxyProtocolRefusesConnectionsWithoutAHeaderOrFromUntrustedPeers() throws {
        try withTestServer(Self.server(proxyProtocol: true)) { server throws in
            // From a trusted peer: no header, or a malformed one: closed without an answer.
            for start in [
                "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "PROXY TCP4 1.2.3.4\r\n", "PROXY TCP9 a b c d\r\n",
            ] {
                let c = try RawHTTPClient(port: server.port, timeout: 5)
                try c.send(start)
                #expect(c.waitForClose(timeout: 5), "\(start.debugDescription) kept open")
            }
            // A good v1 header: served as the client it names.
            let ok = try RawHTTPClient(port: server.port, timeout: 5)
            try ok.send("PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try ok.readResponse().status == 200)
            // LOCAL (a balancer's check): served as from the peer.
            let local = try RawHTTPClient(port: server.port, timeout: 5)
            try local.send(ProxyProtocolFixture.local + Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(try local.readResponse().status == 200)
            #expect(server.logs.text.contains(#""client":"198.51.100.9""#))
            // PROXY UNKNOWN names no client: served as the balancer, and its X-Forwarded-For is not believed.
            let unknown = try RawHTTPClient(port: server.port, timeout: 5)
            try unknown.send(
                "PROXY UNKNOWN\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.44\r\n\r\n")
            #expect(try unknown.readResponse().status == 200)
            #expect(!server.logs.text.contains("198.51.100.44"))
            // v2 LOCAL names no client either: its X-Forwarded-For is not believed (issue 34, defect 5).
            let localForwarded = try RawHTTPClient(port: server.port, timeout: 5)
            try localForwarded.send(
                ProxyProtocolFixture.local
                    + Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.45\r\n\r\n".utf8))
            #expect(try localForwarded.readResponse().status == 200)
            #expect(!server.logs.text.contains("198.51.100.45"))
            // From a peer that is not trusted, even a good header closes the connection.
            let other = try Self.server(proxyProtocol: true, trusted: "10.0.0.0/8")
            defer { other.stop() }
            let c = try RawHTTPClient(port: other.port, timeout: 5)
            try c.send("PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(c.waitForClose(timeout: 5))
        }
    }

    /// Issue 34, defect 6: behind a PROXY-protocol balancer, `Connection: close` and HTTP/1.0
    /// end the connection after the answer, as on the plain listener (they were held open until
    /// the idle timeout). `Connection: keep-alive` on HTTP/1.0 keeps it.
    @Test(arguments: [
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n",
        "GET /elements/v1/cloak.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ])
    func aProxiedClientThatAsksForACloseIsClosed(request: String) throws {
        try withTestServer(Self.server(proxyProtocol: true)) { server throws in
            let c = try RawHTTPClient(port: server.port, timeout: 5)
            try c.send("PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\n" + request)
            let r = try c.readResponse()
            #expect(r.status == 200)
            // The whole answer, then the end of the stream (evhttp cannot say `Connection: close`
            // without closing the socket under the answer's end: LoopWorker.shutDownWhenSent).
            if request.contains("cloak.js") { #expect(r.body.count > 1000 && r.text.hasSuffix("\n")) }
            #expect(c.waitForClose(timeout: 5), "the connection was kept open")
            // A client that keeps the connection is still served on it.
            let kept = try RawHTTPClient(port: server.port, timeout: 5)
            try kept.send("PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try kept.readResponse().status == 200)
            try kept.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try kept.readResponse().status == 200)
            let old = try RawHTTPClient(port: server.port, timeout: 5)
            try old.send(
                "PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\nGET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try old.readResponse().status == 200)
            try old.send("GET /healthz HTTP/1.0\r\n\r\n")
            #expect(try old.readResponse().status == 200)
            #expect(old.waitForClose(timeout: 5))
        }
    }

    /// The same with an answer of several megabytes to a client with a small receive buffer:
    /// most of it still waits in the server's socket bufferevent when the answer is done, and
    /// the sending side ends only once every byte has left (the whole body, then the end).
    @Test func aLargeAnswerToASlowReaderArrivesWholeBeforeTheEnd() throws {
        let yaml = TestServer.configurationWithTokens
            .replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"127.0.0.1/32\"] ")
            .replacingOccurrences(of: "  proxy_protocol: false ", with: "  proxy_protocol: true ")
            .replacingOccurrences(of: "  max_body_bytes: 1048576 ", with: "  max_body_bytes: 16777216 ")
        try withTestServer(TestServer(yaml: yaml)) { server throws in
            let blob = String(repeating: "x", count: 6 << 20)
            let body = Array(
                (#"{"fields":{"card_data.card_number":"4111111111111111","card_data.card_cvc":"123","#
                    + #""card_data.exp_date":"12/30","card_data.card_holder":"Jane Doe"},"extraData":{"blob":""#
                    + blob + #""}}"#).utf8)
            let c = try RawHTTPClient(port: server.port, timeout: 20, receiveBuffer: 4096)
            try c.send(
                "PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\nPOST /forms/checkout/send HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n")
            try c.send(body)
            let r = try c.readResponse()
            #expect(r.status == 200, "\(r.status)")
            #expect(r.body.count > 6 << 20 && r.text.contains(blob), "\(r.body.count) bytes")
            #expect(c.waitForClose(timeout: 10), "the connection was kept open")
        }
    }
}

enum ProxyProtocolFixture {
    /// A PROXY v2 `LOCAL` header (no addresses).
    static let local: [UInt8] = [
        0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x20, 0x00, 0x00, 0x00,
    ]
}
