import CloakTesting
import Foundation
import Testing

@testable import CloakHTTP

/// The response parser against evhttp's client on the same bytes, sent by a real socket: every
/// answer the parser accepts, evhttp reads the same (status, fields, body). Where they differ the
/// parser is the stricter one, and those answers are listed with the rule that refuses them.
@Suite(.serialized) struct ResponseParserDifferentialTests {
    struct Reading: Equatable, CustomStringConvertible {
        var status: Int
        var headers: [String]
        var body: [UInt8]
        var description: String { "\(status) \(headers) \(String(decoding: body, as: UTF8.self).debugDescription)" }
    }

    /// Where evhttp's callback leaves its reading.
    final class Box {
        let base: EventBase
        var reading: Reading?
        var done = false
        init(base: EventBase) { self.base = base }
    }

    /// What evhttp's client reads of `bytes`, answered by a socket that then closes; nil when it
    /// reports a failure.
    static func evhttpReads(_ bytes: [UInt8]) throws -> Reading? {
        let (listener, port) = LoopbackSocket.listening()
        defer { close(listener) }
        let server = Thread {
            let c = accept(listener, nil, nil)
            guard c >= 0 else { return }
            var seen: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while seen.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
                let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                seen += chunk[0..<n]
            }
            _ = bytes.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(c, Int32(SHUT_WR))
            // Until the client has gone: evhttp must see the close, not a reset.
            while chunk.withUnsafeMutableBytes({ recv(c, $0.baseAddress, $0.count, 0) }) > 0 {}
            close(c)
        }
        server.start()
        let base = try #require(EventBase.make())
        defer { base.free() }
        let box = Box(base: base)
        let context = Unmanaged.passUnretained(box).toOpaque()
        let evcon = try #require(
            EvConnection.upstream(base, over: nil, address: "127.0.0.1", port: port, maxBodyBytes: 1 << 20))
        defer { evcon.free() }
        let made = EvRequest.client(
            { req, arg in
                let box = Unmanaged<Box>.fromOpaque(arg!).takeUnretainedValue()
                if let req, case let r = EvRequest(raw: req), r.responseCode > 0 {
                    box.reading = Reading(
                        status: r.responseCode,
                        headers: (r.inputHeaders?.all ?? []).map { "\($0.name): \($0.value)" },
                        body: r.inputBody?.removeAll() ?? [])
                }
                box.done = true
                box.base.breakLoop()
            }, context)
        let request = try #require(made)
        request.outputHeaders?.add("Host", "127.0.0.1")
        #expect(evcon.send(request, .GET, target: "/"))
        let madeTimer = LoopEvent.timer(
            base,
            { _, _, arg in
                Unmanaged<Box>.fromOpaque(arg!).takeUnretainedValue().base.breakLoop()
            }, context)
        let timer = try #require(madeTimer)
        defer { timer.free() }
        timer.schedule(after: 5)
        base.run()
        #expect(box.done, "evhttp neither answered nor failed within 5 s")
        return box.reading
    }

    /// What the parser reads of `bytes`, followed by the peer's close.
    static func parserReads(_ bytes: [UInt8]) -> Result<Reading, ResponseParser.Failure> {
        var parser = ResponseParser(maxBodyBytes: 1 << 20)
        do throws(ResponseParser.Failure) {
            let used = try bytes.withUnsafeBytes { b in
                Result { () throws(ResponseParser.Failure) -> Int? in try parser.consume(b) }
            }.get()
            if used == nil { try parser.close() }
        } catch {
            return .failure(error)
        }
        return .success(
            Reading(status: parser.status, headers: parser.headers.map { "\($0.name): \($0.value)" }, body: parser.body)
        )
    }

    /// Well-formed answers in the shapes upstreams send: both read them, the same.
    static let wellFormed: [String] = [
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}",
        "HTTP/1.1 201 Created\r\nLocation: /v1/charges/ch_1\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the close",
        "HTTP/1.1 500 Internal Server Error\r\nX-Empty:\r\nX-Spaces:   padded   \r\nContent-Length: 1\r\n\r\n!",
        "HTTP/1.1 402 \r\nContent-Length: 2\r\n\r\nno",
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nsame",
        "HTTP/1.1 200 OK\r\nX-Obs-Text: caf\u{e9}\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    ]

    @Test(arguments: Self.wellFormed)
    func wellFormedAnswersAreReadAlike(text: String) throws {
        let bytes = Array(text.utf8)
        let ours = Self.parserReads(bytes)
        let theirs = try Self.evhttpReads(bytes)
        guard case let .success(reading) = ours else {
            Issue.record("the parser refused \(text.debugDescription): \(ours)")
            return
        }
        #expect(reading == theirs, "\(text.debugDescription)")
    }

    /// The one disagreement the other way: evhttp fails on a chunk extension, which RFC 9112
    /// §7.1.1 allows (and a recipient ignores). The parser reads the body; Cloak forwards it
    /// with a length, so no later hop sees the extension.
    @Test func aChunkExtensionIsReadWhereEvhttpFails() throws {
        let bytes = Array(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na;name=value\r\n0123456789\r\n0\r\n\r\n".utf8)
        #expect(
            Self.parserReads(bytes)
                == .success(
                    Reading(status: 200, headers: ["Transfer-Encoding: chunked"], body: Array("0123456789".utf8))))
        #expect(try Self.evhttpReads(bytes) == nil)
    }

    /// Answers evhttp reads one way and a later hop (or a lenient peer) could read another; the
    /// parser refuses each.
    static let refusedWhereEvhttpIsLenient: [(String, ResponseParser.Failure)] = [
        ("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", .bareLineFeed),
        ("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk", .conflictingContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", .invalidFieldName),
        ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 2\r\n\r\nok", .obsoleteLineFolding),
        (
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            .lengthAndTransferEncoding
        ),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n", .invalidChunk),
    ]

    @Test(arguments: Self.refusedWhereEvhttpIsLenient)
    func answersEvhttpWouldTakeAreRefused(text: String, failure: ResponseParser.Failure) throws {
        let bytes = Array(text.utf8)
        #expect(Self.parserReads(bytes) == .failure(failure), "\(text.debugDescription)")
        // Recorded, not required: what evhttp made of it (nil: it failed too).
        _ = try Self.evhttpReads(bytes)
    }

    /// Answers built from parts (status, fields, framing, body, how they are cut): wherever the
    /// parser accepts, evhttp reads the same.
    @Test func generatedAnswersAgreeWhereverTheParserAccepts() throws {
        var generator = SystemRandomNumberGenerator()
        let statuses = ["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content", "HTTP/1.0 200 OK", "HTTP/1.1 503 Busy"]
        let fields = ["X-A: 1", "X-B:2", "Content-Type: text/plain", "X-C:  spaced  ", "Connection: close"]
        let bodies = ["", "a", "hello world", String(repeating: "z", count: 300)]
        var accepted = 0
        for _ in 0..<40 {
            let status = statuses.randomElement(using: &generator)!
            let body = bodies.randomElement(using: &generator)!
            var head = [status] + fields.filter { _ in Bool.random(using: &generator) }
            var payload = body
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:
                head.append("Content-Length: \(body.utf8.count)")
            case 1 where !status.hasPrefix("HTTP/1.0"):
                head.append("Transfer-Encoding: chunked")
                payload = body.isEmpty ? "0\r\n\r\n" : "\(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
            default:
                break  // until the close
            }
            if status.contains(" 204 ") { payload = "" }
            let bytes = Array((head.joined(separator: "\r\n") + "\r\n\r\n" + payload).utf8)
            guard case let .success(ours) = Self.parserReads(bytes) else { continue }
            accepted += 1
            let theirs = try Self.evhttpReads(bytes)
            #expect(ours == theirs, "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
        #expect(accepted > 20)
    }
}
