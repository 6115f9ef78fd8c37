import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakHTTP

/// Cloak's own HTTP/1.1 server on the wire (issue 46): the answers RFC 9110, 9112 and 6585 give
/// where evhttp gave others, deadlines, pipelining, `100 Continue` and the lingering close.
@Suite(.tags(.racy, .sockets)) struct ServerConnectionTests {
    static func start(
        _ configure: (inout HTTPServerConfiguration) -> Void = { _ in }, handler: HTTPHandler? = nil
    ) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration(port: 0, threads: 1, maxBodyBytes: 64 << 10)
        configure(&configuration)
        let server = try HTTPServer(
            configuration: configuration,
            handler: handler ?? { request in
                if let violation = request.violation {
                    return .json(400, Array(#"{"violation":"\#(violation)"}"#.utf8))
                }
                let host = request.header("Host") ?? "-"
                return .json(
                    200, Array(#"{"path":"\#(request.path)","host":"\#(host)","body":\#(request.body.count)}"#.utf8))
            })
        server.start()
        return server
    }

    /// One raw request's answer, and whether the server closed the connection after it.
    static func exchange(_ server: HTTPServer, _ raw: String, hasBody: Bool = true) throws -> (
        RawHTTPClient.Response, closed: Bool
    ) {
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        try client.send(raw)
        let r = try client.readResponse(hasBody: hasBody)
        return (r, client.waitForClose(timeout: 5))
    }

    @Test(arguments: [
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400),
        // Issue 55, item 12: a trailer's field name is held to the head's rule.
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX T: 1\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX@T: 1\r\n\r\n", 400),
        // A DEL is no field-vchar (RFC 9110 5.5).
        ("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{7f}b\r\n\r\n", 400),
        ("PROPFIND / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        ("get / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a:99999x\r\n\r\n", 400),
        ("GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET a/b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET http://user@h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET /#frag HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ])
    func malformedRequestsGetTheirStatusAndAClose(raw: String, status: Int) throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (r, closed) = try Self.exchange(server, raw)
        #expect(r.status == status, "\(raw.debugDescription): \(r.status) \(r.text)")
        #expect(r.header("Connection") == "close")
        #expect(closed)
    }

    /// Issue 55, item 12: a later minor version of HTTP/1 is served as HTTP/1.1 (RFC 9112 2.3),
    /// kept alive and chunked like it; a valid trailer still passes.
    @Test func http12IsServedAsHTTP11() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        try client.send(
            "POST /a HTTP/1.2\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n")
        let r = try client.readResponse()
        #expect(r.status == 200, "\(r.text)")
        #expect(r.text.contains(#""body":3"#))
        try client.send("GET /b HTTP/1.9\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    @Test func anOversizeRequestLineIs414AndAHeadTooLargeIs431() throws {
        let server = try Self.start { $0.maxHeaderBytes = 16 << 10 }
        defer { server.shutdown() }
        let long = try Self.exchange(server, "GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(long.0.status == 414 && long.closed)
        let fields = (0..<101).map { "X-F\($0): v\r\n" }.joined()
        let many = try Self.exchange(server, "GET / HTTP/1.1\r\nHost: x\r\n\(fields)\r\n")
        #expect(many.0.status == 431 && many.closed)
        let big = try Self.exchange(
            server, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 17_000))\r\n\r\n")
        #expect(big.0.status == 431 && big.closed)
        // A trailer section counts against the same limit.
        let trailer = "X-T: \(String(repeating: "t", count: 17_000))\r\n"
        let trailers = try Self.exchange(
            server, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\(trailer)\r\n")
        #expect(trailers.0.status == 431 && trailers.closed)
    }

    @Test func http10NeedsNoHostAndClosesUnlessAskedToKeep() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (r, closed) = try Self.exchange(server, "GET /ten HTTP/1.0\r\n\r\n")
        #expect(r.status == 200 && closed)
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        try client.send("GET /one HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let kept = try client.readResponse()
        #expect(kept.status == 200 && kept.header("Connection") == "keep-alive")
        try client.send("GET /two HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    @Test func anAbsoluteFormTargetNamesTheHost() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (r, _) = try Self.exchange(
            server, "GET http://Example.COM:8080/p%20q?x=1 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n")
        #expect(r.status == 200)
        #expect(r.json?["path"] as? String == "/p q")
        #expect(r.json?["host"] as? String == "Example.COM:8080")
    }

    @Test func pipelinedRequestsAreAnsweredInOrderOneAtATime() throws {
        let order = Mutex<[String]>([])
        let server = try Self.start(handler: { request in
            order.withLock { $0.append(request.path) }
            return .json(200, Array(request.path.utf8))
        })
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        let paths = (0..<50).map { "/r\($0)" }
        try client.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        for path in paths {
            let r = try client.readResponse()
            #expect(r.status == 200 && r.text == path)
        }
        #expect(order.withLock { $0 } == paths)
    }

    @Test func continueIsSentOnlyWhileTheBodyIsAwaited() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        try client.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse(hasBody: false)
        #expect(interim.status == 100)
        try client.send("hello")
        let r = try client.readResponse()
        #expect(r.status == 200 && r.json?["body"] as? Int == 5)
        // Too large on its head: no 100, the refusal instead.
        try client.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.status == 413)
    }

    @Test func aStalledHeadGets408AndAnIdleConnectionJustCloses() throws {
        let server = try Self.start {
            $0.headerTimeoutSeconds = 1
            $0.idleTimeoutSeconds = 30
        }
        defer { server.shutdown() }
        let stalled = try RawHTTPClient(port: server.port, timeout: 5)
        try stalled.send("GET / HTTP/1.1\r\nHost: x\r\n")
        let r = try stalled.readResponse()
        #expect(r.status == 408 && r.header("Connection") == "close")
        #expect(stalled.waitForClose(timeout: 5))
        let idle = try RawHTTPClient(port: server.port, timeout: 5)
        #expect(idle.waitForClose(timeout: 5))
    }

    @Test func aRefusedUploadIsReadByTheClientThatKeepsSending() throws {
        // The lingering close: the server answers 413 on the head and reads (and drops) what the
        // client still sends before it closes, so the answer is not lost to a reset.
        let server = try Self.start()
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        let body = [UInt8](repeating: 0x63, count: 2 << 20)
        try client.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
        _ = client.sendUntilHeldBack(body)
        let r = try client.readResponse()
        #expect(r.status == 413 && r.header("Connection") == "close")
    }

    @Test func aHeadAnswerSaysTheLengthAGetWouldGet() throws {
        let server = try Self.start(handler: { request in
            switch request.path {
            case "/own": return .json(200, Array("hello".utf8))
            case "/given": return HTTPResponse(status: 200, headers: [("Content-Length", "42")])
            default: return HTTPResponse(status: 200)
            }
        })
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 5)
        for (path, length) in [("/own", "5"), ("/given", "42"), ("/none", nil)] as [(String, String?)] {
            try client.send("HEAD \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try client.readResponse(hasBody: false)
            #expect(r.status == 200 && r.header("Content-Length") == length, "\(path)")
        }
        // No body was written: the next answer on the connection reads cleanly.
        try client.send("GET /own HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().text == "hello")
    }

    @Test func aHeadRefusalHasNoBody() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (r, closed) = try Self.exchange(
            server, "HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", hasBody: false)
        #expect(r.status == 400 && closed)
        #expect(r.header("Content-Length") != nil)
    }
}
