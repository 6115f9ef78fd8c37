import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakHTTP

/// The bare server with a trivial handler: what reaches a handler, and what never does.
@Suite(.tags(.sockets)) struct HTTPServerTests {
    static func start(
        _ configuration: HTTPServerConfiguration = .init(port: 0, threads: 2),
        handler: @escaping HTTPHandler
    ) throws -> HTTPServer {
        var c = configuration
        c.port = 0
        let server = try HTTPServer(configuration: c, handler: handler)
        server.start()
        return server
    }

    @Test func handlerSeesDecodedPathQueryHeadersAndBody() throws {
        let seen = Mutex<HTTPRequest?>(nil)
        let server = try Self.start { request in
            seen.withLock { $0 = request }
            return .json(200, Array("{}".utf8))
        }
        defer { server.shutdown() }
        let r = try RawHTTPClient(port: server.port).request(
            "PUT", "/a%20b/c?x=1&y=2", body: Array("hello".utf8), headers: [("X-One", "1")])
        #expect(r.status == 200)
        let request = try #require(seen.withLock { $0 })
        #expect(request.method == .PUT)
        #expect(request.path == "/a b/c")
        #expect(request.query == "x=1&y=2")
        #expect(request.header("x-one") == "1")
        #expect(request.body == Array("hello".utf8))
        #expect(request.violation == nil)
        #expect(!request.requestID.isEmpty)
    }

    @Test func everyMethodReachesTheHandlerSoTheRouterCanAnswer405() throws {
        let server = try Self.start { request in HTTPResponse(status: 299, body: Array(request.method.rawValue.utf8)) }
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            let r = try client.request(method, "/", body: method == "GET" ? nil : [])
            #expect(r.status == 299)
            #expect(r.text == method)
        }
    }

    @Test func listenerBindsEveryLoopToTheSamePort() throws {
        let server = try Self.start(.init(port: 0, threads: 3)) { _ in HTTPResponse(status: 204) }
        defer { server.shutdown() }
        #expect(server.threadCount == 3)
        #expect(server.port > 0)
        for _ in 0..<12 { #expect(try RawHTTPClient(port: server.port).request("GET", "/").status == 204) }
    }

    @Test func bindingAnAddressInUseWithoutReusePortFailsClearly() throws {
        // An address that cannot be bound (not local) is an error, not a crash.
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(configuration: .init(host: "192.0.2.1", port: 0, threads: 1)) { _ in
                HTTPResponse(status: 200)
            }
        }
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(configuration: .init(host: "not-an-ip", port: 0, threads: 1)) { _ in
                HTTPResponse(status: 200)
            }
        }
    }

    @Test func bodiesOverTheLimitReachTheHandlerAsAViolationWithoutTheBody() throws {
        let seen = Mutex<HTTPRequest?>(nil)
        let server = try Self.start(.init(port: 0, threads: 1, maxBodyBytes: 1024)) { request in
            seen.withLock { $0 = request }
            return HTTPResponse(status: 413)
        }
        defer { server.shutdown() }
        let r = try RawHTTPClient(port: server.port).request("POST", "/", body: [UInt8](repeating: 65, count: 1500))
        #expect(r.status == 413)
        #expect(r.header("Connection") == "close")
        let request = try #require(seen.withLock { $0 })
        #expect(request.violation == .bodyTooLarge(limit: 1024))
        #expect(request.body.isEmpty)
    }

    @Test func identicalDuplicateContentLengthsAreAccepted() throws {
        let server = try Self.start { request in HTTPResponse(status: request.violation == nil ? 200 : 400) }
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok")
        #expect(try client.readResponse().status == 200)
    }

    @Test func chunkedAndContentLengthTogetherAreRejected() throws {
        let server = try Self.start { _ in HTTPResponse(status: 200) }
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        try client.send(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        let r = try client.readResponse()
        #expect(r.status == 400)
    }

    @Test func requestIDValidation() {
        #expect(RequestID.isWellFormed("abc-123_x.y"))
        #expect(!RequestID.isWellFormed(""))
        #expect(!RequestID.isWellFormed("a b"))
        #expect(!RequestID.isWellFormed(String(repeating: "a", count: 65)))
        #expect(!RequestID.isWellFormed("a\r\nX-Injected: 1"))
    }
}

@Suite struct RequestIDTests {
    @Test func madeIdsAreThePrefixAndTheCounterInHex() {
        #expect(RequestID.make(prefix: "ab12-0-", counter: 0) == "ab12-0-0")
        #expect(RequestID.make(prefix: "ab12-0-", counter: 255) == "ab12-0-ff")
        #expect(RequestID.make(prefix: "p-", counter: UInt64.max) == "p-ffffffffffffffff")
        #expect(RequestID.make(prefix: "", counter: 0x1_0000) == "10000")
    }
}
