import CloakTesting
import Foundation
import Synchronization
import Testing

@testable import CloakHTTP

/// Request bodies streamed to the handlers that declare it (``RequestBodyDelivery``): larger
/// than the whole-body limit, read only as the handler asks, refused past their own limit.
@Suite(.tags(.racy, .sockets)) struct StreamedBodyTests {
    /// What a handler read of a streamed body.
    struct Reading: Sendable {
        var bytes = 0
        var sum: UInt32 = 0
        var largestPiece = 0
        var end: BodyStream.Piece?
    }

    /// Reads `stream` to its end (or failure), then calls `done`.
    static func drain(
        _ stream: BodyStream, into reading: Reading = Reading(), done: @escaping @Sendable (Reading) -> Void
    ) {
        stream.next { piece in
            var reading = reading
            switch piece {
            case .bytes(let bytes):
                reading.bytes += bytes.count
                reading.largestPiece = max(reading.largestPiece, bytes.count)
                for byte in bytes { reading.sum &+= UInt32(byte) }
                drain(stream, into: reading, done: done)
            case .end, .failed:
                reading.end = piece
                done(reading)
            }
        }
    }

    /// A server whose `POST /upload` streams up to `limit` bytes, every other body whole (64 KiB
    /// at most); `/upload` answers what it read.
    static func start(limit: Int = 8 << 20, handler: HTTPDeferredHandler? = nil) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration(port: 0, threads: 1, maxBodyBytes: 64 << 10)
        configuration.idleTimeoutSeconds = 5
        let server = try HTTPServer(
            configuration: configuration,
            deferredHandler: handler ?? { request, responder in
                guard let stream = request.bodyStream else {
                    let violation = request.violation.map { "\($0)" } ?? "none"
                    return responder.respond(
                        .json(200, Array(#"{"whole":\#(request.body.count),"violation":"\#(violation)"}"#.utf8)))
                }
                drain(stream) { reading in
                    let ok = reading.end == .end
                    responder.respond(
                        .json(
                            ok ? 200 : 400,
                            Array(
                                #"{"bytes":\#(reading.bytes),"sum":\#(reading.sum),"piece":\#(reading.largestPiece)}"#
                                    .utf8)
                        ))
                }
            },
            route: { method, path in
                HeadRoute(body: method == .POST && path == "/upload" ? .streamed(maxBytes: limit) : .whole)
            })
        server.start()
        return server
    }

    static func body(_ count: Int) -> (bytes: [UInt8], sum: UInt32) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        return (bytes, bytes.reduce(0) { $0 &+ UInt32($1) })
    }

    @Test func aBodyLargerThanTheWholeLimitStreamsInPieces() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (bytes, sum) = Self.body(3 << 20)
        let r = try RawHTTPClient(port: server.port).request("POST", "/upload", body: bytes)
        #expect(r.status == 200, "\(r.text)")
        let json = try #require(r.json)
        #expect(json["bytes"] as? Int == bytes.count)
        #expect(json["sum"] as? Int == Int(sum))
        #expect((json["piece"] as? Int ?? .max) <= ReadBuffer.size)
        // The same length elsewhere is over the whole-body limit.
        let whole = try RawHTTPClient(port: server.port).request("POST", "/other", body: Array(bytes.prefix(70_000)))
        #expect(whole.status == 413)
    }

    @Test func aChunkedBodyStreamsWithoutItsFraming() throws {
        let server = try Self.start()
        defer { server.shutdown() }
        let (bytes, sum) = Self.body(200_000)
        var wire = Array("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        while offset < bytes.count {
            let size = min(7_001, bytes.count - offset)
            wire += Array("\(String(size, radix: 16));ext=1\r\n".utf8) + bytes[offset..<(offset + size)] + [13, 10]
            offset += size
        }
        wire += Array("0\r\nX-Trailer: t\r\n\r\n".utf8)
        let client = try RawHTTPClient(port: server.port)
        let sent = client.sendUntilHeldBack(wire)
        let r = try client.readResponse()
        #expect(sent == wire.count)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.json?["bytes"] as? Int == bytes.count)
        #expect(r.json?["sum"] as? Int == Int(sum))
        // The connection serves the next request.
        #expect(try client.request("GET", "/other").status == 200)
    }

    @Test func aHandlerThatIsBehindHoldsTheClientBack() throws {
        let delivered = Atomic<Int>(0)
        let held = Mutex<(BodyStream, HTTPResponder)?>(nil)
        let server = try Self.start(limit: 256 << 20) { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(HTTPResponse(status: 404)) }
            // One piece, then nothing asked until the test says so.
            stream.next { piece in
                if case .bytes(let bytes) = piece { delivered.add(bytes.count, ordering: .relaxed) }
                held.withLock { $0 = (stream, responder) }
            }
        }
        defer { server.shutdown() }
        let total = 256 << 20
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(total)\r\n\r\n")
        let sent = client.sendUntilHeldBack([UInt8](repeating: 0x61, count: total))
        // What the kernel buffers on both sides, not the body: the server read one piece.
        #expect(sent < 64 << 20, "sent \(sent)")
        #expect(Poll.until(seconds: 10) { held.withLock { $0 != nil } })
        #expect(delivered.load(ordering: .relaxed) <= ReadBuffer.size)
        // Answered before its end: the answer arrives, then the connection closes.
        held.withLock { $0?.1.respond(.json(202, Array("{}".utf8))) }
        let r = try client.readResponse()
        #expect(r.status == 202)
        #expect(r.header("Connection") == "close")
        #expect(client.waitForClose(timeout: 10))
    }

    /// Thousands of one-byte chunks read ahead while the handler does not ask (issue 58 review):
    /// they are kept as one run of bytes, not one piece each, and the body arrives whole.
    @Test func oneByteChunksReadAheadArriveWhole() throws {
        let held = Mutex<(BodyStream, HTTPResponder)?>(nil)
        let server = try Self.start { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(HTTPResponse(status: 404)) }
            held.withLock { $0 = (stream, responder) }  // nothing asked until the test drains it
        }
        defer { server.shutdown() }
        let (bytes, sum) = Self.body(4_000)
        var wire = Array("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for byte in bytes { wire += Array("1\r\n".utf8) + [byte] + [13, 10] }
        wire += Array("0\r\n\r\n".utf8)
        let client = try RawHTTPClient(port: server.port)
        #expect(client.sendUntilHeldBack(wire) == wire.count)
        #expect(Poll.until(seconds: 10) { held.withLock { $0 != nil } })
        let (stream, responder) = try #require(held.withLock { $0 })
        Self.drain(stream) { reading in
            let ok = reading.end == .end && reading.bytes == bytes.count && reading.sum == sum
            responder.respond(HTTPResponse(status: ok ? 200 : 400))
        }
        #expect(try client.readResponse().status == 200)
    }

    @Test(arguments: [false, true])
    func anAnswerBeforeTheEndArrivesWholeAndCloses(chunked: Bool) throws {
        let server = try Self.start { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(HTTPResponse(status: 404)) }
            stream.next { _ in responder.respond(.json(422, Array(#"{"refused":"on the first piece"}"#.utf8))) }
        }
        defer { server.shutdown() }
        let (bytes, _) = Self.body(100_000)
        var wire = Array("POST /upload HTTP/1.1\r\nHost: x\r\n".utf8)
        if chunked {
            wire +=
                Array("Transfer-Encoding: chunked\r\n\r\n\(String(bytes.count, radix: 16))\r\n".utf8) + bytes
                + Array("\r\n0\r\n\r\n".utf8)
        } else {
            wire += Array("Content-Length: \(bytes.count)\r\n\r\n".utf8) + bytes
        }
        let client = try RawHTTPClient(port: server.port)
        _ = client.sendUntilHeldBack(wire)
        let r = try client.readResponse()
        #expect(r.status == 422)
        #expect(r.text.contains("on the first piece"))
        #expect(r.header("Connection") == "close")
        #expect(client.waitForClose(timeout: 10))
    }

    @Test func aLengthOverTheStreamLimitIs413OnItsHead() throws {
        let server = try Self.start(limit: 1_000)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
        let r = try client.readResponse()
        #expect(r.status == 413)
        #expect(r.text.contains("bodyTooLarge(limit: 1000)"), "\(r.text)")
        #expect(client.waitForClose(timeout: 10))
    }

    @Test func aChunkedBodyPastTheLimitFailsItsStreamWith413() throws {
        let failure = Mutex<BodyStream.Piece?>(nil)
        let server = try Self.start(limit: 1_000) { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(HTTPResponse(status: 404)) }
            Self.drain(stream) { reading in
                failure.withLock { $0 = reading.end }
                responder.respond(HTTPResponse(status: 200))  // the server's status wins
            }
        }
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        let chunk = [UInt8](repeating: 0x62, count: 600)
        try client.send(
            Array("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n".utf8) + chunk
                + Array("\r\n258\r\n".utf8) + chunk + Array("\r\n0\r\n\r\n".utf8))
        let r = try client.readResponse()
        #expect(r.status == 413)
        #expect(failure.withLock { $0 } == .failed(.bodyTooLarge(limit: 1_000)))
        #expect(client.waitForClose(timeout: 10))
    }

    @Test func aClientThatLeavesMidBodyFailsTheStream() throws {
        let failure = Mutex<BodyStream.Piece?>(nil)
        let server = try Self.start { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(HTTPResponse(status: 404)) }
            Self.drain(stream) { reading in
                failure.withLock { $0 = reading.end }
                responder.respond(HTTPResponse(status: 200))
            }
        }
        defer { server.shutdown() }
        do {
            let client = try RawHTTPClient(port: server.port)
            try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nonly a little")
        }  // closed here
        #expect(Poll.until(seconds: 10) { failure.withLock { $0 } == .failed(nil) })
    }
}

extension StreamedBodyTests {
    /// The deadline moves with the bytes received (16 KiB/s past the body timeout), not with
    /// the limit: a client sending a byte now and then, each within the idle timeout, is cut soon
    /// after the body timeout although its 8 MiB limit would have allowed minutes.
    @Test func aTricklingBodyIsCutAtItsPace() throws {
        var configuration = HTTPServerConfiguration(port: 0, threads: 1, maxBodyBytes: 64 << 10)
        configuration.idleTimeoutSeconds = 5
        configuration.bodyTimeoutSeconds = 1
        let server = try HTTPServer(
            configuration: configuration,
            deferredHandler: { request, responder in
                guard let stream = request.bodyStream else { return responder.respond(.json(200, [])) }
                Self.drain(stream) { reading in responder.respond(.json(reading.end == .end ? 200 : 400, [])) }
            },
            route: { _, _ in HeadRoute(body: .streamed(maxBytes: 8 << 20)) })
        server.start()
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port, timeout: 20)
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        let started = Date()
        var cut = false
        while Date().timeIntervalSince(started) < 15 {
            do { try client.send("a") } catch {
                cut = true
                break
            }
            if client.waitForClose(timeout: 0.3) {
                cut = true
                break
            }
        }
        #expect(cut, "a body at a byte per 0.3 s was still read after 15 s")
    }
}
