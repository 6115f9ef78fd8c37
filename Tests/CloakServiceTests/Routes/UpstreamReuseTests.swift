import CloakTesting
import Foundation
import Synchronization
import Testing

/// What a caller on a pooled upstream connection is promised (issue 44, defect 0; review V,
/// item 8): nothing an upstream sends behind an answer ever reaches another caller. The
/// upstream sends a numbered answer nobody asked for right behind each real one, tagged with the
/// caller of the request it trails, while the connection's next request has not arrived. A
/// pooled connection carries only the exchanges of the caller it was opened for (a token, or a
/// client address after trusted proxies), so whatever the kernel does with segments, a stray
/// can reach only the caller it trails: any answer tagged with another caller fails the test,
/// exactly, with no timing in it. Plain and TLS, one loop, 48 callers of four requests each
/// (their connections reused), all at once.
@Suite(.serialized, .tags(.racy, .sockets)) struct UpstreamReuseTests {
    static func withRoute(
        _ transport: TrailingBytesUpstream.Transport, reuse: Bool = true,
        _ body: (TestServer, TrailingBytesUpstream) throws -> Void
    ) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let upstream = try TrailingBytesUpstream(transport, certificates: certificates)
        defer { upstream.stop() }
        let scheme = transport == .tls ? "https" : "http"
        let trust = transport == .tls ? "ca_file: \"\(certificates.caFile)\"" : ""
        try withTestServer(
            TestServer(
                yaml: TestServer.configurationWithTokens
                    .replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"127.0.0.1/32\"] ")
                    .replacingOccurrences(
                        of: "routes: []",
                        with: """
                            routes:
                              - id: "3d4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f10"
                                path: /pooled
                                upstream: "\(scheme)://127.0.0.1:\(upstream.port)/pooled"
                                reuse: \(reuse)
                                \(trust)

                            """), threads: 1)
        ) { server throws in
            try body(server, upstream)
        }
    }

    /// Every request's answer, all at once: request `i` is caller `i % callers`'s (its own
    /// client address, forwarded by a trusted proxy, and its tag in the body); each answer with
    /// the caller it went to.
    static func answers(_ server: TestServer, requests: Int, callers: Int) -> [(caller: Int, answer: String)] {
        let answers = Mutex<[(Int, String)]>([])
        allAtOnce(requests) { i in
            let caller = i % callers
            let r = try? server.client().request(
                "POST", "/proxy/pooled", body: Array(#"{"c":"c\#(caller)x"}"#.utf8),
                headers: [("X-Forwarded-For", "10.0.\(caller / 200).\(caller % 200 + 1)")])
            let text = r.map { "\($0.status) \($0.status == 502 ? String($0.errorCode ?? 0) : $0.text)" } ?? "no answer"
            answers.withLock { $0.append((caller, text)) }
        }
        return answers.withLock { $0 }
    }

    @Test(arguments: [TrailingBytesUpstream.Transport.plain, .tls])
    func bytesAnUpstreamSentBehindAnAnswerNeverReachAnotherCaller(transport: TrailingBytesUpstream.Transport) throws {
        try Self.withRoute(transport) { server, _ in
            let requests = 192  // one loop: its pool has 64 connections
            let all = Self.answers(server, requests: requests, callers: 48)
            #expect(all.count == requests)
            // A stray is tagged with the body of the request it trailed (`{"c":"c7x"}` → `cc7x`):
            // only that caller may get it.
            let crossed = all.filter { $0.answer.hasPrefix("200 s") && !$0.answer.hasSuffix("-cc\($0.caller)x") }
            #expect(crossed.isEmpty, "\(transport): \(crossed.count) callers got another caller's bytes: \(crossed)")
            #expect(
                all.allSatisfy { $0.answer == "200 ok" || $0.answer.hasPrefix("200 s") || $0.answer == "502 1401" },
                "\(transport): \(Set(all.map(\.answer)))")
            #expect(
                all.filter { $0.answer == "200 ok" }.count >= requests / 2, "\(transport): \(Set(all.map(\.answer)))")
        }
    }

    /// An upstream that answers every request on a connection with the tag of the first
    /// request that connection carried: whose connection a caller was given, deterministically.
    static let firstTagUpstream =
        PythonServer.readRequest + "\n" + #"""
            import socket, threading
            listener = socket.create_server(("127.0.0.1", 0))
            def serve(conn):
                first = None
                data = b""
                try:
                    while True:
                        while b"\r\n\r\n" not in data:
                            chunk = conn.recv(65536)
                            if not chunk:
                                return
                            data += chunk
                        head = data.split(b"\r\n\r\n", 1)[0]
                        tag = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"x-tag:")]
                        data = read_request(conn, data)
                        if data is None:
                            return
                        if first is None:
                            first = tag[0] if tag else b"-"
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(first) + first)
                finally:
                    conn.close()
            print(listener.getsockname()[1], flush=True)
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
            """#

    /// Review V, item 8, one request at a time: the connection caller A's request went on is
    /// idle when caller B asks, and B gets a connection of its own (on e3f4d6f it was given
    /// A's); A's next request goes on A's own connection again.
    @Test func anIdleConnectionIsReusedOnlyForTheCallerItServed() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let upstream = try PythonServer(script: Self.firstTagUpstream, in: directory.path, arguments: [])
        defer { upstream.stop() }
        try withTestServer(
            TestServer(
                yaml: TestServer.configurationWithTokens
                    .replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"127.0.0.1/32\"] ")
                    .replacingOccurrences(
                        of: "routes: []",
                        with: """
                            routes:
                              - id: "3d4f2f1e-6a8e-4a55-9a41-5d2b1c7e9f11"
                                path: /pooled
                                upstream: "http://127.0.0.1:\(upstream.port)/pooled"

                            """), threads: 1)
        ) { server throws in
            func ask(_ address: String, _ tag: String) throws -> String {
                let r = try server.client().request(
                    "POST", "/proxy/pooled", body: Array("{}".utf8),
                    headers: [("X-Forwarded-For", address), ("X-Tag", tag)])
                return "\(r.status) \(r.text)"
            }
            #expect(try ask("10.0.0.1", "alice") == "200 alice")
            #expect(try ask("10.0.0.2", "bob") == "200 bob")
            #expect(try ask("10.0.0.1", "alice-again") == "200 alice")
            #expect(try ask("10.0.0.2", "bob-again") == "200 bob")
        }
    }

    /// `reuse: false`: every exchange on a connection of its own, `Connection: close` sent, so
    /// no caller can get anything meant for another whenever the upstream sends it.
    @Test(arguments: [TrailingBytesUpstream.Transport.plain, .tls])
    func aRouteThatDoesNotReuseConnectionsGivesNoCallerAnotherAnswer(
        transport: TrailingBytesUpstream.Transport
    ) throws {
        try Self.withRoute(transport, reuse: false) { server, _ in
            let all = Self.answers(server, requests: 96, callers: 96)
            #expect(
                all.count == 96 && all.allSatisfy { $0.answer == "200 ok" }, "\(transport): \(Set(all.map(\.answer)))")
        }
    }
}
