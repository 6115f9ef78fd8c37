import CloakTesting
import Foundation
import Synchronization
import Testing

/// What a caller on a pooled upstream connection is promised (issue 44, defect 0): no byte
/// that reached Cloak before its own request was written whole is taken for its answer. The
/// upstream sends a numbered answer nobody asked for right behind each real one, but only
/// while the connection's next request has not arrived, and records whether the request was
/// still absent once those bytes were out (`early`). An early answer given to any caller fails
/// the test; a late one (the request and the bytes crossed: HTTP/1.1 cannot tell them from the
/// answer) is allowed, as is a 502 for an exchange whose answer began while part of its request
/// was still unsent. Plain and TLS, one loop, three callers per pooled connection.
@Suite(.serialized) struct UpstreamReuseTests {
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
                yaml: TestServer.configurationWithTokens.replacingOccurrences(
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

    /// Every caller's answer, all at once.
    static func answers(_ server: TestServer, callers: Int) -> [String] {
        let answers = Mutex<[String]>([])
        allAtOnce(callers) { _ in
            let r = try? server.client().request("POST", "/proxy/pooled", body: Array("{}".utf8))
            let text = r.map { "\($0.status) \($0.status == 502 ? String($0.errorCode ?? 0) : $0.text)" } ?? "no answer"
            answers.withLock { $0.append(text) }
        }
        return answers.withLock { $0 }
    }

    @Test(arguments: [TrailingBytesUpstream.Transport.plain, .tls])
    func bytesThatCameBeforeARequestNeverAnswerIt(transport: TrailingBytesUpstream.Transport) throws {
        try Self.withRoute(transport) { server, upstream in
            let callers = 192  // one loop: its pool has 64 connections
            let all = Self.answers(server, callers: callers)
            #expect(all.count == callers)
            let given = all.filter { $0.hasPrefix("200 s") }.map { String($0.dropFirst(4)) }
            // The upstream writes its record after the bytes are sent: wait for each one given.
            var trailers = upstream.trailers()
            for _ in 0..<500 where !given.allSatisfy({ trailers[$0] != nil }) {
                usleep(10_000)
                trailers = upstream.trailers()
            }
            let early = given.filter { trailers[$0] != false }
            #expect(early.isEmpty, "\(transport): \(early.count) callers got bytes sent before their request")
            #expect(
                all.allSatisfy { $0 == "200 ok" || $0.hasPrefix("200 s") || $0 == "502 1401" },
                "\(transport): \(Set(all))")
            #expect(all.filter { $0 == "200 ok" }.count >= callers / 2, "\(transport): \(Set(all))")
        }
    }

    /// `reuse: false`: every exchange on a connection of its own, `Connection: close` sent, so
    /// no caller can get anything meant for another whenever the upstream sends it.
    @Test(arguments: [TrailingBytesUpstream.Transport.plain, .tls])
    func aRouteThatDoesNotReuseConnectionsGivesNoCallerAnotherAnswer(
        transport: TrailingBytesUpstream.Transport
    ) throws {
        try Self.withRoute(transport, reuse: false) { server, _ in
            let all = Self.answers(server, callers: 96)
            #expect(all.count == 96 && all.allSatisfy { $0 == "200 ok" }, "\(transport): \(Set(all))")
        }
    }
}
