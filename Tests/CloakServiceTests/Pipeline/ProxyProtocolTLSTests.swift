import CloakTesting
import Foundation
import Testing

/// A TLS listener behind a PROXY-protocol balancer (issue 44, defect 1b: it crashed in
/// libcrypto on its first request, whatever the client): curl with `--haproxy-protocol`
/// (PROXY v1) and a Python client sending a v2 header, on one and two loops. Also: a request
/// pipelined behind one that asked to close is never run (defect 10).
@Suite(.serialized, .tags(.racy, .sockets)) struct ProxyProtocolTLSTests {
    static func server(threads: Int, tls: Bool, _ certificates: TestCertificates) throws -> TestServer {
        let yaml = TestServer.configurationWithTokens
            .replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"127.0.0.1/32\"] ")
            .replacingOccurrences(of: "  proxy_protocol: false ", with: "  proxy_protocol: true ")
        return try TestServer(
            yaml: yaml, threads: threads,
            tlsFiles: tls ? (certificates.serverCertificate, certificates.serverKey) : nil)
    }

    @Test(arguments: [1, 2])
    func curlWithAProxyV1HeaderIsServedOverTLS(threads: Int) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        try withTestServer(Self.server(threads: threads, tls: true, certificates)) { server throws in
            for path in ["/healthz", "/elements/v1/cloak.js", "/healthz"] {
                let r = try EgressFixture.run(
                    "curl",
                    [
                        "-s", "--haproxy-protocol", "--cacert", certificates.caFile, "-o", "/dev/null", "-w",
                        "%{http_code}", "https://localhost:\(server.port)\(path)",
                    ])
                #expect(r.out == "200", "\(path): \(r.out) \(r.err)")
            }
            // The server is alive and counts the client the header named.
            let post = try EgressFixture.run(
                "curl",
                [
                    "-s", "--haproxy-protocol", "--cacert", certificates.caFile, "-X", "POST",
                    "https://localhost:\(server.port)/forms/checkout/validate", "-d", #"{"fields":{}}"#,
                ])
            #expect(post.out.contains("\"isValid\""), "\(post.out)")
        }
    }

    @Test func aProxyV2HeaderThenTLSIsServed() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        try withTestServer(Self.server(threads: 2, tls: true, certificates)) { server throws in
            let script = #"""
                import socket, ssl, struct, sys
                port, ca = int(sys.argv[1]), sys.argv[2]
                raw = socket.create_connection(("127.0.0.1", port))
                addresses = socket.inet_aton("198.51.100.8") + socket.inet_aton("127.0.0.1") + struct.pack("!HH", 40000, port)
                raw.sendall(b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack("!H", len(addresses)) + addresses)
                context = ssl.create_default_context(cafile=ca)
                conn = context.wrap_socket(raw, server_hostname="localhost")
                for _ in range(2):
                    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(4096)
                    print(data.split(b"\r\n")[0].decode())
                """#
            let file = "\(certificates.directory.path)/v2.py"
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try EgressFixture.run("python3", [file, String(server.port), certificates.caFile])
            #expect(r.out == "HTTP/1.1 200 OK\nHTTP/1.1 200 OK\n", "\(r.out) \(r.err)")
        }
    }

    /// The header and the ClientHello in one segment, as AWS NLB and often HAProxy send them:
    /// the hello, read with the header, is answered (it waited for the socket otherwise).
    @Test(arguments: [1, 2])
    func aHeaderAndClientHelloInOneSegmentAreServed(version: Int) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        try withTestServer(Self.server(threads: 1, tls: true, certificates)) { server throws in
            let script = #"""
                import socket, ssl, struct, sys
                port, ca, version = int(sys.argv[1]), sys.argv[2], sys.argv[3]
                if version == "1":
                    header = b"PROXY TCP4 198.51.100.8 127.0.0.1 40000 %d\r\n" % port
                else:
                    addresses = socket.inet_aton("198.51.100.8") + socket.inet_aton("127.0.0.1") + struct.pack("!HH", 40000, port)
                    header = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack("!H", len(addresses)) + addresses
                context = ssl.create_default_context(cafile=ca)
                incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
                tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
                raw = socket.create_connection(("127.0.0.1", port))
                raw.settimeout(10)
                first = True
                while True:
                    try:
                        tls.do_handshake()
                        break
                    except ssl.SSLWantReadError:
                        pending = outgoing.read()
                        raw.sendall((header if first else b"") + pending)  # one write: header and hello
                        first = False
                        data = raw.recv(65536)
                        if not data:
                            print("closed during the handshake")
                            sys.exit(1)
                        incoming.write(data)
                tls.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                raw.sendall(outgoing.read())
                answer = b""
                while b"\r\n\r\n" not in answer:
                    try:
                        answer += tls.read(4096)
                    except ssl.SSLWantReadError:
                        incoming.write(raw.recv(65536))
                        raw.sendall(outgoing.read())
                print(answer.split(b"\r\n")[0].decode())
                """#
            let file = "\(certificates.directory.path)/one-segment.py"
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try EgressFixture.run("python3", [file, String(server.port), certificates.caFile, String(version)])
            #expect(r.out == "HTTP/1.1 200 OK\n", "\(r.out) \(r.err)")
        }
    }

    /// Behind PROXY protocol, a request pipelined after `Connection: close` is dropped: the
    /// client asked to end the connection, and before the fix a token it sent next was stored
    /// while its answer was lost.
    @Test func aRequestBehindOneThatAskedToCloseIsNeverRun() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        try withTestServer(Self.server(threads: 1, tls: false, certificates)) { server throws in
            let client = try RawHTTPClient(port: server.port)
            try client.send(
                "PROXY TCP4 198.51.100.9 127.0.0.1 4000 80\r\n"
                    + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    + "GET /healthz?second HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(client.waitForClose(timeout: 10), "the connection was kept open")
            let requests = server.logs.lines.filter { $0.contains(#""msg":"request""#) && $0.contains("healthz") }
            #expect(requests.count == 1, "\(requests)")
        }
    }
}
