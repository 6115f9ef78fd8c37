import CloakTesting
import Foundation
import Testing

@testable import CloakHTTP

/// The response parser against h11 (PyPI, pinned by `scripts/test-python`), a strict HTTP/1.1
/// client written apart from Cloak, on the same bytes followed by the peer's close: every answer
/// the parser accepts, h11 reads the same (status, fields, body). Where they differ the parser
/// is the stricter one, and those answers are listed with the rule that refuses them.
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["CLOAK_TEST_PYTHON"] != nil,
        "needs CLOAK_TEST_PYTHON (scripts/test sets it from scripts/test-python)"),
    .tags(.python))
struct ResponseParserDifferentialTests {
    struct Reading: Equatable, CustomStringConvertible {
        var status: Int
        var headers: [String]
        var body: [UInt8]
        var description: String { "\(status) \(headers) \(String(decoding: body, as: UTF8.self).debugDescription)" }
    }

    static let script = #"""
        import base64, json, sys
        import h11

        def read(data):
            conn = h11.Connection(h11.CLIENT)
            conn.send(h11.Request(method="GET", target="/", headers=[("Host", "127.0.0.1")]))
            conn.send(h11.EndOfMessage())
            conn.receive_data(data)
            conn.receive_data(b"")
            status, headers, body = None, [], b""
            try:
                while True:
                    event = conn.next_event()
                    if isinstance(event, h11.Response):
                        status = event.status_code
                        headers = [k.decode("utf-8") + ": " + v.decode("utf-8") for k, v in event.headers.raw_items()]
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        return {"status": status, "headers": headers, "body": base64.b64encode(body).decode()}
                    elif event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                        return None
            except h11.RemoteProtocolError:
                return None

        print(json.dumps([read(open(path, "rb").read()) for path in sys.argv[1:]]))
        """#

    /// What h11 reads of each answer (nil: it refused it, or found it unfinished at the close).
    static func h11Reads(_ inputs: [[UInt8]]) throws -> [Reading?] {
        let list = try #require(try TestPython.run(Self.script, inputs: inputs) as? [Any])
        return list.map { item in
            guard let item = item as? [String: Any], let status = item["status"] as? Int else { return nil }
            return Reading(
                status: status, headers: item["headers"] as? [String] ?? [],
                body: Array(Data(base64Encoded: item["body"] as? String ?? "") ?? Data()))
        }
    }

    static func h11Reads(_ bytes: [UInt8]) throws -> Reading? { try h11Reads([bytes])[0] }

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
        "HTTP/1.1 200 OK\r\nX-Obs-Text: caf\u{e9}\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    ]

    @Test(arguments: Self.wellFormed)
    func wellFormedAnswersAreReadAlike(text: String) throws {
        let bytes = Array(text.utf8)
        let ours = Self.parserReads(bytes)
        let theirs = try Self.h11Reads(bytes)
        guard case let .success(reading) = ours else {
            Issue.record("the parser refused \(text.debugDescription): \(ours)")
            return
        }
        #expect(reading == theirs, "\(text.debugDescription)")
    }

    /// Two identical lengths: both read one body (h11 keeps one of the fields, the parser both).
    @Test func identicalLengthsFrameOneBody() throws {
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nsame".utf8)
        guard case let .success(ours) = Self.parserReads(bytes) else {
            Issue.record("the parser refused identical lengths")
            return
        }
        #expect(ours.body == Array("same".utf8))
        #expect(try Self.h11Reads(bytes)?.body == ours.body)
    }

    /// A chunk extension, which RFC 9112 §7.1.1 allows (and a recipient ignores): both read the
    /// body; Cloak forwards it with a length, so no later hop sees the extension.
    @Test func aChunkExtensionIsReadAndIgnored() throws {
        let bytes = Array(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na;name=value\r\n0123456789\r\n0\r\n\r\n".utf8)
        #expect(
            Self.parserReads(bytes)
                == .success(
                    Reading(status: 200, headers: ["Transfer-Encoding: chunked"], body: Array("0123456789".utf8))))
        #expect(try Self.h11Reads(bytes)?.body == Array("0123456789".utf8))
    }

    /// Answers a lenient peer could read one way and a later hop another; the parser refuses each.
    static let refusedWhereOthersMayBeLenient: [(String, ResponseParser.Failure)] = [
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

    @Test(arguments: Self.refusedWhereOthersMayBeLenient)
    func ambiguousAnswersAreRefused(text: String, failure: ResponseParser.Failure) throws {
        let bytes = Array(text.utf8)
        #expect(Self.parserReads(bytes) == .failure(failure), "\(text.debugDescription)")
    }

    /// Answers built from parts (status, fields, framing, body, how they are cut): wherever the
    /// parser accepts, h11 reads the same.
    @Test func generatedAnswersAgreeWhereverTheParserAccepts() throws {
        var generator = SystemRandomNumberGenerator()
        let statuses = ["HTTP/1.1 200 OK", "HTTP/1.1 204 No Content", "HTTP/1.0 200 OK", "HTTP/1.1 503 Busy"]
        let fields = ["X-A: 1", "X-B:2", "Content-Type: text/plain", "X-C:  spaced  ", "Connection: close"]
        let bodies = ["", "a", "hello world", String(repeating: "z", count: 300)]
        var accepted: [([UInt8], Reading)] = []
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
            accepted.append((bytes, ours))
        }
        let theirs = try Self.h11Reads(accepted.map(\.0))
        for ((bytes, ours), theirs) in zip(accepted, theirs) {
            #expect(ours == theirs, "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
        #expect(accepted.count > 20)
    }
}
