import Testing

@testable import CloakHTTP

/// The upstream client's response parser on bytes alone: what it accepts, how it frames the body,
/// and every refusal, fed whole and one byte at a time (a read may end anywhere).
@Suite struct ResponseParserTests {
    enum Outcome: Equatable {
        case answer(status: Int, headers: [String], body: String, reusable: Bool, used: Int)
        case needsMore
        case refused(ResponseParser.Failure)
    }

    /// Feeds `text` in pieces of `step` bytes (0: whole), then a close when `closes`.
    static func parse(_ text: String, step: Int = 0, head: Bool = false, closes: Bool = false, maxBody: Int = 1 << 20)
        -> Outcome
    {
        var parser = ResponseParser(maxHeadBytes: 4096, maxBodyBytes: maxBody, bodyless: head)
        let bytes = Array(text.utf8)
        var offset = 0
        do throws(ResponseParser.Failure) {
            while offset < bytes.count {
                let end = step == 0 ? bytes.count : min(bytes.count, offset + step)
                let chunk = Array(bytes[offset..<end])
                let used = try chunk.withUnsafeBytes { chunk in
                    Result { () throws(ResponseParser.Failure) -> Int? in try parser.consume(chunk) }
                }.get()
                if let used { return answer(parser, used: offset + used) }
                offset = end
            }
            guard closes else { return .needsMore }
            try parser.close()
            return answer(parser, used: bytes.count)
        } catch {
            return .refused(error)
        }
    }

    static func answer(_ p: ResponseParser, used: Int) -> Outcome {
        .answer(
            status: p.status, headers: p.headers.map { "\($0.name)=\($0.value)" },
            body: String(decoding: p.body, as: UTF8.self), reusable: p.reusable, used: used)
    }

    /// Whole and byte by byte must agree.
    static func both(_ text: String, head: Bool = false, closes: Bool = false, maxBody: Int = 1 << 20) -> Outcome {
        let whole = parse(text, head: head, closes: closes, maxBody: maxBody)
        let bytewise = parse(text, step: 1, head: head, closes: closes, maxBody: maxBody)
        #expect(whole == bytewise, "\(text.debugDescription)")
        return whole
    }

    @Test func aLengthFramedAnswerIsReadAndItsConnectionKept() {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
        #expect(
            Self.both(text)
                == .answer(
                    status: 200, headers: ["Content-Type=text/plain", "Content-Length=5"], body: "hello",
                    reusable: true, used: text.utf8.count))
    }

    @Test func bytesAfterTheAnswerAreNotPartOfIt() {
        let text = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nokEXTRA"
        guard case let .answer(_, _, body, _, used) = Self.parse(text) else {
            Issue.record("no answer")
            return
        }
        #expect(body == "ok" && used == text.utf8.count - 5)
    }

    @Test func chunkedBodiesWithExtensionsAndTrailersAreJoined() {
        let text =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1 ;x\r\n!\r\n0\r\nX-T: 1\r\n\r\n"
        #expect(
            Self.both(text)
                == .answer(
                    status: 200, headers: ["Transfer-Encoding=chunked"], body: "hello!", reusable: true,
                    used: text.utf8.count))
    }

    @Test func anAnswerWithoutALengthIsReadUntilTheCloseAndNotReused() {
        let text = "HTTP/1.1 200 OK\r\nX: y\r\n\r\nall of it"
        #expect(Self.both(text) == .needsMore)
        #expect(
            Self.both(text, closes: true)
                == .answer(status: 200, headers: ["X=y"], body: "all of it", reusable: false, used: text.utf8.count))
    }

    @Test(arguments: [
        ("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", false),
        ("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", true),
    ])
    func answersWithoutABodyEndAtTheirHead(text: String, head: Bool) {
        guard case let .answer(_, _, body, reusable, used) = Self.both(text, head: head) else {
            Issue.record("no answer: \(text.debugDescription)")
            return
        }
        #expect(body.isEmpty && reusable && used == text.utf8.count)
    }

    @Test func interimAnswersAreSkipped() {
        let text =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        #expect(
            Self.both(text)
                == .answer(status: 200, headers: ["Content-Length=0"], body: "", reusable: true, used: text.utf8.count))
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    ])
    func aConnectionThePeerClosesOrHTTP10IsNotReused(text: String) {
        guard case let .answer(_, _, _, reusable, _) = Self.both(text) else {
            Issue.record("no answer")
            return
        }
        #expect(!reusable)
    }

    /// The rule requests follow (HTTPSyntax.asksToClose): HTTP/1.0 keeps the connection only
    /// when it says keep-alive.
    @Test func anHTTP10AnswerThatSaysKeepAliveKeepsItsConnection() {
        guard
            case let .answer(_, _, _, reusable, _) = Self.both(
                "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")
        else {
            Issue.record("no answer")
            return
        }
        #expect(reusable)
    }

    @Test func sameLengthTwiceAndSpacesAroundValuesAreAccepted() {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length:2 \r\nX:\t a b \t\r\n\r\nok"
        guard case let .answer(_, headers, body, _, _) = Self.both(text) else {
            Issue.record("no answer")
            return
        }
        #expect(body == "ok" && headers.last == "X=a b")
    }

    static let refusals: [(String, String, ResponseParser.Failure)] = [
        ("bare LF in the head", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", .bareLineFeed),
        ("bare LF ending the head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", .bareLineFeed),
        ("bare CR in a value", "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n", .bareCarriageReturn),
        (
            "conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            .conflictingContentLength
        ),
        ("a signed length", "HTTP/1.1 200 OK\r\nContent-Length: +4\r\n\r\nabcd", .invalidContentLength),
        ("a length list", "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\nabcd", .invalidContentLength),
        ("a negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("a huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", .invalidContentLength),
        ("an empty length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", .invalidContentLength),
        (
            "length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            .lengthAndTransferEncoding
        ),
        ("gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferCoding),
        (
            "chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            .unsupportedTransferCoding
        ),
        ("chunked in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferCoding),
        ("a space before the colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", .invalidFieldName),
        ("no colon", "HTTP/1.1 200 OK\r\nContent-Length 0\r\n\r\n", .invalidFieldName),
        ("an empty name", "HTTP/1.1 200 OK\r\n: x\r\n\r\n", .invalidFieldName),
        ("folding", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", .obsoleteLineFolding),
        ("a NUL in a value", "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n", .invalidFieldValue),
        ("HTTP/2", "HTTP/2 200\r\n\r\n", .invalidStatusLine),
        ("no reason space", "HTTP/1.1 200OK\r\n\r\n", .invalidStatusLine),
        ("a two-digit status", "HTTP/1.1 20 OK\r\n\r\n", .invalidStatusLine),
        ("status 600", "HTTP/1.1 600 X\r\n\r\n", .invalidStatusLine),
        ("lower-case version", "http/1.1 200 OK\r\n\r\n", .invalidStatusLine),
        ("not HTTP", "SSH-2.0-OpenSSH_9.2\r\n", .invalidStatusLine),
        ("a control in the reason", "HTTP/1.1 200 O\u{1}K\r\n\r\n", .invalidStatusLine),
        ("switching protocols", "HTTP/1.1 101 Switching Protocols\r\n\r\n", .switchingProtocols),
        (
            "a chunk size with a sign", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
            .invalidChunk
        ),
        (
            "a chunk size 0x", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
            .invalidChunk
        ),
        (
            "a chunk longer than said", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            .invalidChunk
        ),
        (
            "a chunk ending in bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n0\r\n\r\n",
            .bareLineFeed
        ),
        (
            "a huge chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
            .invalidChunk
        ),
        (
            "a chunk past the body limit", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n",
            .bodyTooLarge
        ),
        ("a length past the body limit", "HTTP/1.1 200 OK\r\nContent-Length: 65537\r\n\r\n", .bodyTooLarge),
        ("a bad trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX : 1\r\n\r\n", .invalidFieldName),
    ]

    @Test(arguments: Self.refusals)
    func hostileFramingIsRefused(name: String, text: String, failure: ResponseParser.Failure) {
        #expect(Self.both(text, maxBody: 65536) == .refused(failure), "\(name)")
    }

    @Test func anUnboundedAnswerIsRefusedAtItsLimits() {
        let longHead = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 300)
        #expect(Self.both(longHead) == .refused(.headTooLarge))
        let longLine = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 5000)
        #expect(Self.both(longLine) == .refused(.headTooLarge))
        let manyFields = "HTTP/1.1 200 OK\r\n" + String(repeating: "A:\r\n", count: 200)
        #expect(Self.both(manyFields) == .refused(.headTooLarge))
        let untilClose = "HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "z", count: 70000)
        #expect(Self.both(untilClose, maxBody: 65536) == .refused(.bodyTooLarge))
        let tinyChunks =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "1\r\nz\r\n", count: 40000)
        #expect(Self.both(tinyChunks, maxBody: 65536) == .refused(.bodyTooLarge))
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        "HTTP/1.1 200 OK\r\nContent-Le",
        "HTTP/1.1 2",
    ])
    func anAnswerCutShortByACloseEndedEarly(text: String) {
        #expect(Self.both(text, closes: true) == .refused(.endedEarly))
    }

    @Test func noBytesAtAllIsNoAnswerRatherThanABrokenOne() {
        var parser = ResponseParser(maxBodyBytes: 10)
        #expect(!parser.hasStarted)
        #expect(throws: ResponseParser.Failure.endedEarly) { try parser.close() }
    }
}
