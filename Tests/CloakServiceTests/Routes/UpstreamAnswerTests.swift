import CloakTesting
import Foundation
import Synchronization
import Testing

/// What an upstream sends back, over the wire through a real route: an answer whose framing
/// could be read two ways is refused (502, 1401) and none of it reaches the client; an answer
/// carrying more than itself never leaves its extra bytes on a pooled connection.
@Suite(.serialized, .tags(.racy, .sockets)) struct UpstreamAnswerTests {
    static func withRoute(
        answer: String, closeAfter: Bool = true, threads: Int = 2, _ body: (TestServer, CannedUpstream) throws -> Void
    ) throws {
        let upstream = CannedUpstream(answer: Array(answer.utf8), closeAfter: closeAfter)
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: HostileInputTests.routeYAML(upstream.port), threads: threads)) {
            server throws in
            try body(server, upstream)
        }
    }

    @Test(arguments: [
        ("bare LF", "HTTP/1.1 200 OK\nContent-Length: 6\n\nsecret"),
        ("conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Length: 2\r\n\r\nsecret"),
        ("a signed length", "HTTP/1.1 200 OK\r\nContent-Length: +6\r\n\r\nsecret"),
        (
            "length and chunked",
            "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecret\r\n0\r\n\r\n"
        ),
        ("a coding not chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nsecret"),
        ("a space before the colon", "HTTP/1.1 200 OK\r\nContent-Length : 6\r\n\r\nsecret"),
        ("folding", "HTTP/1.1 200 OK\r\nX-A: 1\r\n X-Injected: 1\r\nContent-Length: 6\r\n\r\nsecret"),
        ("a broken chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nsecret\r\n0\r\n\r\n"),
        ("oversize", "HTTP/1.1 200 OK\r\nContent-Length: 9000000\r\n\r\nsecret"),
        ("cut short", "HTTP/1.1 200 OK\r\nContent-Length: 60\r\n\r\nsecret"),
        ("not HTTP", "SSH-2.0-OpenSSH_9.2\r\nsecret\r\n"),
        ("switching protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nsecret"),
    ])
    func anAnswerThatCannotBeFramedOneWayIs502(name: String, answer: String) throws {
        try Self.withRoute(answer: answer) { server, _ in
            let r = try server.client().request("POST", "/proxy/raw", body: Array("{}".utf8))
            #expect(r.status == 502 && r.errorCode == 1401, "\(name): \(r.status) \(r.text)")
            #expect(!r.text.contains("secret"), "\(name)")
            #expect(!server.logs.text.contains("secret"), "\(name)")
        }
    }

    /// An answer read until the close, cut by a reset: never passed on as a whole 200.
    @Test func aResetEndsNoAnswerReadUntilTheClose() throws {
        let upstream = CannedUpstream(answer: Array("HTTP/1.1 200 OK\r\n\r\n{\"status\":\"appro".utf8), reset: true)
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: HostileInputTests.routeYAML(upstream.port))) { server throws in
            let r = try server.client().request("POST", "/proxy/raw", body: Array("{}".utf8))
            #expect(r.status == 502 && (r.errorCode == 1401 || r.errorCode == 1400), "\(r.status) \(r.text)")
            #expect(!r.text.contains("appro"))
        }
    }

    /// A forwarded header that could not be a field is the caller's error, found before the
    /// pool: nothing is sent and no connection is taken (a pooled one is not closed for it).
    @Test func aRequestThatCannotBeSentIs400AndTakesNoConnection() throws {
        let upstream = RawUpstream()
        defer { upstream.stop() }
        try withTestServer(TestServer(yaml: HostileInputTests.routeYAML(upstream.port))) { server throws in
            let client = try server.client()
            #expect(try client.request("GET", "/proxy/raw").status == 204)
            try client.send("GET /proxy/raw HTTP/1.1\r\nHost: x\r\nX-Note: a\u{01}b\r\n\r\n")
            let r = try client.readResponse()
            #expect(r.status == 400 && r.errorCode == 1002, "\(r.status) \(r.text)")
            #expect(!upstream.text.contains("X-Note"))
            #expect(try server.client().request("GET", "/proxy/raw").status == 204)
            #expect(upstream.text.components(separatedBy: "GET /raw").count == 3)
        }
    }

    @Test func noAnswerAtAllIsAnUnreachableUpstream() throws {
        try Self.withRoute(answer: "") { server, _ in
            let r = try server.client().request("GET", "/proxy/raw")
            #expect(r.status == 502 && r.errorCode == 1400, "\(r.status) \(r.text)")
        }
    }

    /// An answer followed by a second one nobody asked for (response splitting): the first is
    /// passed on, the connection is dropped, and the next request gets a connection of its own
    /// rather than the smuggled answer.
    @Test func bytesAfterAnAnswerNeverAnswerTheNextRequest() throws {
        let split = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"
        try Self.withRoute(answer: split, closeAfter: false) { server, upstream in
            let client = try server.client()
            for _ in 0..<3 {
                let r = try client.request("GET", "/proxy/raw")
                #expect(r.status == 200 && r.text == "ok", "\(r.status) \(r.text)")
            }
            #expect(upstream.connections == 3)
        }
    }

    /// The same when the answer ends exactly where a read's buffer (16 KiB) does and the pool
    /// has exchanges waiting (three times as many callers at once as the loop's pool has
    /// connections): the smuggled answer still waits in the socket, and a connection handed
    /// straight to the next exchange would give it to another caller. So it is not reused.
    @Test func bytesWaitingBehindAFullReadNeverAnswerAWaitingExchange() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: "
        let bodyLength = 16384 - head.utf8.count - 5 - 4  // a five-digit length and CRLFCRLF
        let first = head + "\(bodyLength)\r\n\r\n" + String(repeating: "a", count: bodyLength)
        #expect(first.utf8.count == 16384)
        let split = first + "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"
        try Self.withRoute(answer: split, closeAfter: false, threads: 1) { server, upstream in
            let callers = 192  // one loop: its pool has 64 connections
            let answers = Mutex<[String]>([])
            allAtOnce(callers) { _ in
                let text = (try? server.client().request("GET", "/proxy/raw")).map { "\($0.status) \($0.text)" }
                answers.withLock { $0.append(text ?? "no answer") }
            }
            let all = answers.withLock { $0 }
            #expect(all.count == callers)
            #expect(
                all.allSatisfy { $0.hasPrefix("200 ") && !$0.contains("secret") },
                "\(all.filter { $0.contains("secret") }.count) smuggled")
            #expect(upstream.connections == callers)
        }
    }

    /// A well-framed answer keeps its connection: three requests, one connection.
    @Test func aFramedAnswerKeepsItsConnection() throws {
        try Self.withRoute(answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", closeAfter: false) {
            server, upstream in
            let client = try server.client()
            for _ in 0..<3 {
                let r = try client.request("GET", "/proxy/raw")
                #expect(r.status == 200 && r.text == "ok")
            }
            #expect(upstream.connections == 1)
        }
    }
}
