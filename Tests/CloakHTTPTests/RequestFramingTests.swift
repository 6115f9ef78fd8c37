import Testing

@testable import CloakHTTP

/// The strict framing scan, without sockets: fed whole, cut at every point and byte by byte.
extension RequestFraming {
    /// The scanner reads bytes in place; tests hand it arrays.
    @discardableResult
    mutating func consume(_ bytes: [UInt8]) -> Verdict {
        bytes.withUnsafeBytes { consume($0) }
    }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// One input and what the scan must make of it.
struct FramingCase: Sendable, CustomTestStringConvertible {
    let name: String
    let input: [UInt8]
    let verdict: RequestFraming.Verdict
    /// Requests framed completely.
    let requests: Int
    var afterConnect = RequestFraming.AfterConnect.keepScanning

    var testDescription: String { name }

    static func valid(_ name: String, _ text: String, requests: Int) -> FramingCase {
        FramingCase(name: name, input: bytes(text), verdict: .scanning, requests: requests)
    }

    static func refused(_ name: String, _ text: String, _ violation: RequestFraming.BrokenRule, after requests: Int = 0)
        -> FramingCase
    {
        FramingCase(name: name, input: bytes(text), verdict: .violated(violation), requests: requests)
    }
}

private let get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

/// A chunked POST whose body is `chunks` (sizes, extensions, data, last chunk, trailers).
private func chunked(_ chunks: String) -> String {
    "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
}

/// A POST with one extra header line.
private func post(header: String, body: String = "") -> String {
    "POST /p HTTP/1.1\r\nHost: x\r\n\(header)\r\n\r\n\(body)"
}

/// A GET, a POST and a chunked POST whose bodies hold heads, bare LFs, CRs and a NUL, a GET.
private func pipelined() -> String {
    let body = "\n\nTransfer-Encoding: identity\r\n\r\nGET / HTTP/1.1\n\n\r\u{0}\r\r\n\n"
    let data = "\r\n0\r\n\r\nContent-Length: +4\n\n"
    return get + post(header: "Content-Length: \(body.utf8.count)", body: body)
        + chunked(String(data.utf8.count, radix: 16) + "\r\n" + data + "\r\n0\r\n\r\n") + get
}

private let validCases: [FramingCase] = [
    .valid("GET", get, requests: 1),
    .valid("GET without headers, HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", requests: 1),
    .valid("POST with Content-Length", post(header: "Content-Length: 5", body: "hello"), requests: 1),
    .valid("POST with Content-Length 0", post(header: "Content-Length: 0"), requests: 1),
    .valid("POST without a length has no body", "POST / HTTP/1.1\r\nHost: x\r\n\r\n" + get, requests: 2),
    .valid("HTTP/1.0 POST with Content-Length", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", requests: 1),
    .valid("Content-Length with OWS and any case", post(header: "content-LENGTH: \t 5 \t", body: "hello"), requests: 1),
    .valid("Content-Length of 18 digits", post(header: "Content-Length: 000000000000000003", body: "abc"), requests: 1),
    .valid(
        "identical Content-Length twice",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", requests: 1),
    .valid(
        "GET, DELETE and OPTIONS with bodies (evhttp reads them)",
        "GET / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"
            + "DELETE /d HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"
            + "OPTIONS * HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\ny\r\n0\r\n\r\n",
        requests: 3),
    .valid("HEAD with Content-Length 0", "HEAD / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", requests: 1),
    .valid("chunked", chunked("4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"), requests: 1),
    .valid(
        "chunked with extensions and trailers",
        chunked(
            "4;name=value\r\nWiki\r\n5;a;b=\"c d\"\r\npedia\r\nA\r\n0123456789\r\n0;last\r\nX-Checksum: abc\r\nX-More: 1\r\n\r\n"
        ),
        requests: 1),
    .valid(
        "chunk sizes in any case, 16 digits",
        chunked("a\r\n0123456789\r\n000000000000000B\r\n0123456789A\r\n0\r\n\r\n"),
        requests: 1),
    .valid(
        "Transfer-Encoding in any case with OWS", post(header: "transfer-ENCODING:   Chunked \t") + "0\r\n\r\n",
        requests: 1),
    .valid("leading CRLF before a request line", "\r\n\r\n" + get, requests: 1),
    .valid(
        "a long header line with HTAB and obs-text",
        "GET / HTTP/1.1\r\nX-Long: " + String(repeating: "abc\tdéf ", count: 120) + "\r\n"
            + "\(String(repeating: "X", count: 200)): y\r\n\r\n",
        requests: 1),
    .valid("an unfinished head", "GET / HTTP/1.1\r\nHost: x\r", requests: 0),
    .valid("an unfinished body", post(header: "Content-Length: 10", body: "12345"), requests: 0),
    .valid("an unfinished chunk", chunked("10\r\nabc"), requests: 0),
    .valid("an unfinished trailer", chunked("0\r\nX-T: 1\r\n"), requests: 0),
    .valid("pipelined, bodies that look like heads are not scanned", pipelined(), requests: 4),
    .valid(
        "CONNECT, then more requests (the default)",
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n" + get, requests: 2),
    FramingCase(
        name: "CONNECT, then tunnel bytes (pass-through)",
        input: bytes("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            + [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03, 0x0A, 0x0A, 0x0D, 0x00, 0x0D, 0x0A],
        verdict: .passThrough, requests: 1, afterConnect: .passThrough),
    .valid("a lowercase method without a body", "get / HTTP/1.1\r\n\r\n", requests: 1),
]

private let refusedCases: [FramingCase] = [
    // Content-Length
    .refused("Content-Length +4", post(header: "Content-Length: +4", body: "abcd"), .invalidContentLength),
    .refused("Content-Length -1", post(header: "Content-Length: -1"), .invalidContentLength),
    .refused("Content-Length 4 4", post(header: "Content-Length: 4 4", body: "abcd"), .invalidContentLength),
    .refused("Content-Length 0x4", post(header: "Content-Length: 0x4", body: "abcd"), .invalidContentLength),
    .refused("Content-Length 4,4", post(header: "Content-Length: 4,4", body: "abcd"), .invalidContentLength),
    .refused("Content-Length empty", post(header: "Content-Length:"), .invalidContentLength),
    .refused("Content-Length blank", post(header: "Content-Length:  \t "), .invalidContentLength),
    .refused("Content-Length of 19 digits", post(header: "Content-Length: 0000000000000000004"), .invalidContentLength),
    .refused("Content-Length with a vertical tab", post(header: "Content-Length: \u{0B}4"), .controlCharacter),
    .refused(
        "Content-Length 4 then 5",
        "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", .conflictingContentLength),
    .refused(
        "Content-Length 4 then 04",
        "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 04\r\n\r\nabcd", .conflictingContentLength),
    .refused(
        "a Content-Length line longer than the buffer",
        post(header: "Content-Length:" + String(repeating: " ", count: 60) + "4", body: "abcd"), .framingFieldTooLong),
    .refused("whitespace before a colon", post(header: "Content-Length : 4", body: "abcd"), .whitespaceBeforeColon),
    .refused("HTAB before a colon", post(header: "Transfer-Encoding\t: chunked"), .whitespaceBeforeColon),
    // Transfer-Encoding
    .refused(
        "Transfer-Encoding identity then chunked",
        "POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .unsupportedTransferEncoding),
    .refused(
        "Transfer-Encoding chunked twice",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .repeatedTransferEncoding),
    .refused("Transfer-Encoding identity", post(header: "Transfer-Encoding: identity"), .unsupportedTransferEncoding),
    .refused(
        "Transfer-Encoding gzip, chunked", post(header: "Transfer-Encoding: gzip, chunked"),
        .unsupportedTransferEncoding),
    .refused(
        "Transfer-Encoding chunked, chunked", post(header: "Transfer-Encoding: chunked, chunked"),
        .unsupportedTransferEncoding),
    .refused("Transfer-Encoding empty", post(header: "Transfer-Encoding:"), .unsupportedTransferEncoding),
    .refused(
        "Transfer-Encoding after a leading HTAB (evhttp would not read it as chunked)",
        post(header: "Transfer-Encoding:\tchunked") + "0\r\n\r\n", .unsupportedTransferEncoding),
    .refused(
        "Transfer-Encoding after Content-Length",
        "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .transferEncodingWithContentLength),
    .refused(
        "Content-Length after Transfer-Encoding",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
        .transferEncodingWithContentLength),
    .refused(
        "Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .transferEncodingBeforeHTTP11),
    // Line ends and bytes
    .refused("bare LF in the request line", "GET / HTTP/1.1\nHost: x\r\n\r\n", .bareLineFeed),
    .refused("bare LF in a header", "GET / HTTP/1.1\r\nHost: x\n\r\n", .bareLineFeed),
    .refused("bare LF ending the head", "GET / HTTP/1.1\r\nHost: x\r\n\n", .bareLineFeed),
    .refused("bare LF before a request line", "\n" + get, .bareLineFeed),
    .refused("bare LF heads (evhttp accepts them)", "POST / HTTP/1.1\nContent-Length: 4\n\nabcd", .bareLineFeed),
    .refused("bare CR in a header", "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", .bareCarriageReturn),
    .refused("CR CR LF", "GET / HTTP/1.1\r\r\n\r\n", .bareCarriageReturn),
    .refused("bare CR ending the head", "GET / HTTP/1.1\r\nHost: x\r\n\rGET", .bareCarriageReturn),
    .refused("NUL in a header name", "POST / HTTP/1.1\r\nContent-Length\u{0}x: 4\r\n\r\nabcd", .controlCharacter),
    .refused("NUL in the request line", "GET /\u{0} HTTP/1.1\r\n\r\n", .controlCharacter),
    .refused("a control byte in a value", "GET / HTTP/1.1\r\nX: a\u{1B}b\r\n\r\n", .controlCharacter),
    .refused("obs-fold with SP", "GET / HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", .obsoleteLineFolding),
    .refused("obs-fold with HTAB", "GET / HTTP/1.1\r\nX-A: a\r\n\tb\r\n\r\n", .obsoleteLineFolding),
    .refused(
        "obs-fold of Transfer-Encoding",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n ,identity\r\n\r\n0\r\n\r\n", .obsoleteLineFolding),
    .refused("a header line without a colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", .malformedFieldLine),
    .refused("a header line without a name", "GET / HTTP/1.1\r\n: x\r\n\r\n", .malformedFieldLine),
    // Bodies evhttp would not read
    .refused("HEAD with a body", "HEAD / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", .unexpectedBody),
    .refused("TRACE chunked", "TRACE / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .unexpectedBody),
    .refused("an unknown method with a body", "BREW /pot HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", .unexpectedBody),
    .refused("a lowercase method with a body", "post / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", .unexpectedBody),
    .refused("CONNECT with a body", "CONNECT h:443 HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", .unexpectedBody),
    // Chunks
    .refused("chunk size 0x4", chunked("0x4\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size with a leading space", chunked(" 4\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size with a trailing space", chunked("4 \r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size +4", chunked("+4\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size -1", chunked("-1\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size empty", chunked("\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size with only an extension", chunked(";x\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size g", chunked("g\r\n"), .invalidChunkSize),
    .refused("chunk size of 17 digits", chunked("00000000000000004\r\nabcd\r\n0\r\n\r\n"), .invalidChunkSize),
    .refused("chunk size ended by a bare LF", chunked("4\nabcd\r\n0\r\n\r\n"), .bareLineFeed),
    .refused("chunk extension with a bare CR", chunked("4;a\rb\r\nabcd\r\n0\r\n\r\n"), .bareCarriageReturn),
    .refused("chunk extension with a bare LF", chunked("4;a\nabcd\r\n0\r\n\r\n"), .bareLineFeed),
    .refused(
        "chunk line too long", chunked("4;" + String(repeating: "x", count: 200) + "\r\nabcd\r\n0\r\n\r\n"),
        .chunkLineTooLong),
    .refused("chunk data not followed by CRLF", chunked("4\r\nabcdX\r\n0\r\n\r\n"), .missingChunkTerminator),
    .refused("chunk data followed by LF", chunked("4\r\nabcd\n0\r\n\r\n"), .missingChunkTerminator),
    .refused("chunk data followed by CR and no LF", chunked("4\r\nabcd\r0\r\n\r\n"), .missingChunkTerminator),
    .refused("chunk data followed by the next size", chunked("4\r\nabcd0\r\n\r\n"), .missingChunkTerminator),
    .refused("Content-Length in a trailer", chunked("0\r\nContent-Length: 5\r\n\r\n"), .framingFieldInTrailer),
    .refused(
        "Transfer-Encoding in a trailer", chunked("0\r\nTransfer-Encoding: chunked\r\n\r\n"), .framingFieldInTrailer),
    .refused("a trailer ended by a bare LF", chunked("0\r\nX-T: 1\n\r\n"), .bareLineFeed),
    .refused("an empty trailer line ended by a bare LF", chunked("0\r\n\n"), .bareLineFeed),
    .refused("obs-fold in a trailer", chunked("0\r\nX-T: 1\r\n 2\r\n\r\n"), .obsoleteLineFolding),
    // In a later request, and sticky
    .refused(
        "a violation in a pipelined request", get + get + post(header: "Content-Length: +1", body: "x"),
        .invalidContentLength, after: 2),
    .refused(
        "a violation stays", post(header: "Transfer-Encoding: identity") + get + get, .unsupportedTransferEncoding),
    .refused(
        "CONNECT, then tunnel bytes read as HTTP (the default)",
        "CONNECT example.com:443 HTTP/1.1\r\n\r\n\u{16}\u{3}\u{1}\u{2}\u{0}", .controlCharacter, after: 1),
    // CONNECT targets evhttp refuses itself (its 400 keeps the connection, and the rest of the
    // head would be read as requests)
    .refused("CONNECT [x", "CONNECT [x HTTP/1.1\r\nGET /a?b:c HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT a:b:c", "CONNECT a:b:c HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT to a port of 8 digits", "CONNECT a:99999999 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT to port 70000", "CONNECT a:70000 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT with an escape", "CONNECT %zz:1 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT without a host", "CONNECT :443 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT without a port", "CONNECT a.example HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT to []", "CONNECT []:443 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT to [v6 unclosed", "CONNECT [::1:443 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    // evhttp takes the target up to the line's last space
    .refused("CONNECT with two spaces", "CONNECT a:1  HTTP/1.1\r\nGET /x?a:b HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT with a word before the version", "CONNECT a:1 x HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    .refused("CONNECT with a word after the version", "CONNECT a:1 HTTP/1.1 x\r\n\r\n", .invalidConnectTarget),
    .refused(
        "CONNECT with a bad target longer than the inline buffer",
        "CONNECT [" + String(repeating: "x", count: 60) + " HTTP/1.1\r\nGET /x?a:b HTTP/1.1\r\n\r\n",
        .invalidConnectTarget),
    .refused(
        "CONNECT with a line longer than any target",
        "CONNECT " + String(repeating: "a", count: 300) + ".example:443 HTTP/1.1\r\n\r\n", .invalidConnectTarget),
    { () -> FramingCase in
        var refused = FramingCase.refused(
            "any CONNECT where no tunnel is served", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", .connectNotServed)
        refused.afterConnect = .refuse
        return refused
    }(),
]

private let connectTargets: [FramingCase] = [
    .valid("CONNECT to a name", "CONNECT api.stripe.com:443 HTTP/1.1\r\nHost: api.stripe.com:443\r\n\r\n", requests: 1),
    .valid("CONNECT to an address", "CONNECT 127.0.0.1:8443 HTTP/1.1\r\n\r\n", requests: 1),
    .valid("CONNECT to a v6 address", "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", requests: 1),
    .valid(
        "CONNECT to a name longer than the inline buffer",
        "CONNECT " + String(repeating: "a", count: 80) + ".example:443 HTTP/1.1\r\n\r\n", requests: 1),
    .valid("CONNECT over HTTP/1.0", "CONNECT [::ffff:10.0.0.1]:00443 HTTP/1.0\r\n\r\n", requests: 1),
]

@Suite struct RequestFramingTests {
    /// Every case of this file (``RequestParserTests`` holds the parser to the same verdicts).
    static let corpus = validCases + refusedCases + connectTargets

    static func framing(_ input: [UInt8], _ afterConnect: RequestFraming.AfterConnect) -> RequestFraming {
        var framing = RequestFraming(afterConnect: afterConnect)
        framing.consume(input)
        return framing
    }

    @Test(arguments: validCases + refusedCases + connectTargets)
    func theVerdictOfAWholeInput(_ item: FramingCase) {
        var framing = RequestFraming(afterConnect: item.afterConnect)
        #expect(framing.consume(item.input) == item.verdict)
        #expect(framing.verdict == item.verdict)
        #expect(framing.requestsFramed == item.requests)
        if case let .violated(violation) = item.verdict {
            #expect(framing.isViolated)
            #expect(framing.violation == violation)
            #expect(!framing.isScanning)
        } else {
            #expect(!framing.isViolated)
            #expect(framing.violation == nil)
        }
    }

    /// However the bytes are cut into reads, the scan ends in the same state.
    @Test(arguments: validCases + refusedCases + connectTargets)
    func everyCutGivesTheSameState(_ item: FramingCase) {
        let whole = Self.framing(item.input, item.afterConnect)
        #expect(whole.verdict == item.verdict)
        for cut in 0...item.input.count {
            var framing = RequestFraming(afterConnect: item.afterConnect)
            framing.consume(Array(item.input[..<cut]))
            framing.consume(Array(item.input[cut...]))
            #expect(framing == whole, "cut at \(cut)")
        }
        var dripped = RequestFraming(afterConnect: item.afterConnect)
        for byte in item.input { dripped.consume([byte]) }
        #expect(dripped == whole, "byte by byte")
        #expect(dripped.requestsFramed == item.requests)
    }

    /// Three pieces, every pair of cuts (the inputs short enough).
    @Test(arguments: (validCases + refusedCases + connectTargets).filter { $0.input.count <= 120 })
    func everyPairOfCutsGivesTheSameState(_ item: FramingCase) {
        let whole = Self.framing(item.input, item.afterConnect)
        let n = item.input.count
        for first in 0...n {
            for second in first...n {
                var framing = RequestFraming(afterConnect: item.afterConnect)
                framing.consume(Array(item.input[..<first]))
                framing.consume(Array(item.input[first..<second]))
                framing.consume(Array(item.input[second...]))
                if framing != whole {
                    Issue.record("cuts at \(first) and \(second)")
                    return
                }
            }
        }
    }

    @Test func pipelinedRequestsAreFramedOneAfterAnother() {
        var framing = RequestFraming()
        #expect(framing.isBetweenRequests)
        framing.consume(bytes(get))
        #expect(framing.requestsFramed == 1)
        #expect(framing.isBetweenRequests)
        // A body holding a whole request and bare LFs: skipped by count.
        let body = "GET /x HTTP/1.1\nTransfer-Encoding: identity\n\n"
        framing.consume(bytes(post(header: "Content-Length: \(body.utf8.count)")))
        #expect(!framing.isBetweenRequests)
        framing.consume(bytes(body))
        #expect(framing.requestsFramed == 2)
        #expect(framing.isBetweenRequests)
        #expect(framing.consume(bytes(get)) == .scanning)
        #expect(framing.requestsFramed == 3)
    }

    @Test func binaryBodiesAreNotScanned() {
        let body = (0...255).map(UInt8.init) + [0x0A, 0x0A, 0x0D, 0x0D, 0x00]
        var framing = RequestFraming()
        framing.consume(bytes(post(header: "Content-Length: \(body.count)")))
        #expect(framing.consume(body) == .scanning)
        #expect(framing.requestsFramed == 1)
        // The same bytes as chunk data.
        framing.consume(bytes(chunked(String(body.count, radix: 16) + "\r\n")))
        framing.consume(body)
        #expect(framing.consume(bytes("\r\n0\r\n\r\n")) == .scanning)
        #expect(framing.requestsFramed == 2)
    }

    @Test func aHugeContentLengthIsSkippedByCount() {
        var framing = RequestFraming()
        framing.consume(bytes(post(header: "Content-Length: 999999999999999999")))
        let block = [UInt8](repeating: 0x0A, count: 4096)
        for _ in 0..<100 { #expect(framing.consume(block) == .scanning) }
        #expect(framing.requestsFramed == 0)
    }

    @Test func stopScanningIgnoresWhatFollows() {
        var framing = RequestFraming()
        framing.consume(bytes(get))
        framing.stopScanning()
        #expect(framing.verdict == .passThrough)
        #expect(!framing.isScanning)
        #expect(framing.consume(bytes("\n\n\r\u{0}garbage")) == .passThrough)
        #expect(!framing.isViolated)
    }

    @Test func stopScanningKeepsAViolation() {
        var framing = RequestFraming()
        framing.consume(bytes("GET / HTTP/1.1\n"))
        framing.stopScanning()
        #expect(framing.verdict == .violated(.bareLineFeed))
        #expect(framing.consume(bytes(get)) == .violated(.bareLineFeed))
    }

    @Test func connectPassesThroughOnlyWhenAsked() {
        let connect = bytes("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        var tunnel = RequestFraming(afterConnect: .passThrough)
        #expect(tunnel.consume(connect) == .passThrough)
        #expect(tunnel.consume([0x16, 0x03, 0x01, 0x00, 0x0A, 0x0D]) == .passThrough)
        // The stream stays HTTP by default: the requests inside a granted tunnel reach evhttp
        // decrypted, on the same input buffer.
        var http = RequestFraming()
        #expect(http.consume(connect) == .scanning)
        #expect(
            http.consume(bytes(post(header: "Content-Length: 0x4", body: "abcd"))) == .violated(.invalidContentLength))
        // A lowercase `connect` is not CONNECT to evhttp.
        var lower = RequestFraming(afterConnect: .passThrough)
        #expect(lower.consume(bytes("connect example.com:443 HTTP/1.1\r\n\r\n")) == .scanning)
    }

    /// The descriptions go to logs: none quotes the request.
    @Test func violationsDescribeTheRuleOnly() throws {
        var framing = RequestFraming()
        framing.consume(bytes(post(header: "Transfer-Encoding: secret-token")))
        let description = String(describing: try #require(framing.violation))
        #expect(!description.contains("secret"))
        #expect(description == "Transfer-Encoding is not exactly chunked")
    }

    /// The word-at-a-time search agrees with a byte loop, wherever it starts and whatever the
    /// bytes (high ones included: they must not look like control bytes).
    @Test func theControlByteSearchIsTheByteLoop() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [
            0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x3A, 0x41, 0x7F, 0x80, 0x9F, 0xA0, 0xDF, 0xE0, 0xFF,
        ]
        for _ in 0..<5_000 {
            let count = Int.random(in: 0..<40, using: &generator)
            // Mostly printable, so that runs longer than a word occur.
            let input = (0..<count).map { _ in
                Int.random(in: 0..<4, using: &generator) == 0
                    ? alphabet.randomElement(using: &generator)! : UInt8.random(in: 0x20...0xFF, using: &generator)
            }
            let start = Int.random(in: 0...count, using: &generator)
            let expected = input[start...].firstIndex(where: { $0 < 0x20 || $0 == 0x7F }) ?? count
            input.withUnsafeBytes { raw in
                #expect(RequestFraming.firstControlByte(raw, from: start) == expected, "\(input) from \(start)")
            }
        }
    }

    /// A bare LF is found at any offset of a long line (either side of the word boundaries).
    @Test(arguments: 0..<40)
    func aBareLineFeedIsFoundAtAnyOffset(offset: Int) {
        var value = [UInt8](repeating: UInt8(ascii: "v"), count: 40)
        value[offset] = 0x0A
        var framing = RequestFraming()
        #expect(
            framing.consume(bytes("GET / HTTP/1.1\r\nX-Value: ") + value + bytes("\r\n\r\n"))
                == .violated(.bareLineFeed))
    }
}
