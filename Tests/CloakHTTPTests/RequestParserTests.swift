import Testing

@testable import CloakHTTP

/// The request parser, without sockets: the framing corpus's verdicts kept, heads and bodies
/// read the same however the bytes are cut, and the rules it adds (head limits, Host, the
/// request line).
@Suite struct RequestParserTests {
    /// What a parser made of an input, the bodies joined per message.
    struct Reading: Equatable, CustomStringConvertible {
        var heads: [RequestHead] = []
        var bodies: [[UInt8]] = []
        var ends = 0
        var violation: RequestParser.BrokenRule?
        var tunnel = false
        var description: String {
            "\(heads.map { "\($0.method) \($0.target)" }) bodies \(bodies.map(\.count)) ends \(ends) \(violation.map { "\($0)" } ?? "") \(tunnel ? "tunnel" : "")"
        }
    }

    /// Feeds `input` in pieces of `piece` bytes (the whole at once when nil), as a connection would:
    /// what a call did not consume is given again with the next bytes.
    static func read(
        _ input: [UInt8], piece: Int? = nil, limits: RequestParser.Limits = .init(),
        afterConnect: RequestFraming.AfterConnect = .keepScanning
    ) -> Reading {
        var parser = RequestParser(limits: limits, afterConnect: afterConnect)
        var reading = Reading()
        var pending: [UInt8] = []
        var offset = 0
        var body: [UInt8] = []
        while true {
            let step = min(piece ?? input.count, input.count - offset)
            pending += input[offset..<(offset + step)]
            offset += step
            var progressed = true
            while progressed {
                progressed = false
                let (consumed, event) = pending.withUnsafeBytes { parser.parse($0) }
                switch event {
                case .needMore: break
                case .head(let head):
                    reading.heads.append(head)
                    body = []
                    progressed = true
                case .body(let range):
                    body += pending[range]
                    progressed = true
                case .end:
                    reading.bodies.append(body)
                    body = []
                    reading.ends += 1
                    progressed = true
                case .violation(let violation):
                    reading.violation = violation
                    return reading
                case .tunnel:
                    reading.tunnel = true
                    return reading
                }
                pending.removeFirst(consumed)
            }
            if offset == input.count { return reading }
        }
    }

    /// The corpus's valid inputs the parser refuses by its own rule: an HTTP/1.1 request without
    /// `Host` is 400 (RFC 9112 3.2; evhttp serves it).
    static let stricter: [String: RequestParser.BrokenRule] = [
        "a lowercase method without a body": .missingHost,
        "a long header line with HTAB and obs-text": .missingHost,
        "HEAD with Content-Length 0": .missingHost,
        "GET, DELETE and OPTIONS with bodies (evhttp reads them)": .missingHost,
        "CONNECT, then tunnel bytes read as HTTP (the default)": .missingHost,
        "CONNECT to an address": .missingHost,
        "CONNECT to a v6 address": .missingHost,
        "CONNECT to a name longer than the inline buffer": .missingHost,
    ]

    @Test(arguments: RequestFramingTests.corpus)
    func theFramingsVerdictsAreKept(_ item: FramingCase) {
        let whole = Self.read(item.input, afterConnect: item.afterConnect)
        for piece in [nil, 1, 7] as [Int?] {
            let reading = Self.read(item.input, piece: piece, afterConnect: item.afterConnect)
            #expect(reading == whole, "\(item.name): pieces of \(piece ?? 0) read otherwise than the whole")
            if let own = Self.stricter[item.name] {
                #expect(reading.violation == own, "\(item.name): \(reading)")
                continue
            }
            switch item.verdict {
            case .violated(let violation):
                #expect(reading.violation == .framing(violation), "\(item.name), pieces of \(piece ?? 0)")
                #expect(reading.ends == item.requests, "\(item.name): \(reading)")
            case .scanning, .passThrough:
                #expect(reading.violation == nil, "\(item.name), pieces of \(piece ?? 0): \(reading)")
                #expect(reading.ends == item.requests || reading.tunnel, "\(item.name): \(reading)")
            }
        }
    }

    static let pipelined = Array(
        ("\r\nGET /a?x=1 HTTP/1.1\r\nHost: cloak\r\nAccept:  */* \t\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: cloak\r\nContent-Length: 5\r\n\r\nhello"
            + "POST /c HTTP/1.1\r\nHost: cloak\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer-Field: t\r\n\r\n"
            + "HEAD /d HTTP/1.0\r\n\r\n").utf8)

    @Test(arguments: [nil, 1, 2, 3, 5, 11, 64] as [Int?])
    func pipelinedRequestsComeOutWithTheirHeadsAndBodies(piece: Int?) throws {
        let reading = Self.read(Self.pipelined, piece: piece)
        #expect(reading.violation == nil && reading.ends == 4, "\(reading)")
        #expect(reading.heads.map(\.method) == ["GET", "POST", "POST", "HEAD"])
        #expect(reading.heads.map(\.target) == ["/a?x=1", "/b", "/c", "/d"])
        #expect(reading.heads.map(\.isHTTP11) == [true, true, true, false])
        #expect(reading.heads.map(\.body) == [.none, .length(5), .chunked, .none])
        let first = try #require(reading.heads.first)
        #expect(first.headers.map(\.name) == ["Host", "Accept"] && first.header("accept") == "*/*")
        #expect(reading.bodies.map { String(decoding: $0, as: UTF8.self) } == ["", "hello", "abcde", ""])
    }

    @Test func aConnectHeadHandsTheRestToTheTunnel() {
        let input = Array("CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n\u{16}\u{3}\u{1}".utf8)
        let reading = Self.read(input, afterConnect: .passThrough)
        #expect(reading.heads.map(\.target) == ["api.example:443"] && reading.tunnel)
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", RequestParser.BrokenRule.missingHost),
        ("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", .repeatedHost),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion),
        ("GET / HTTP/1.10\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("GET / http/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        // A DEL is a control character wherever it is in a head (issue 55, item 12).
        ("GET /\u{7f} HTTP/1.1\r\nHost: a\r\n\r\n", .framing(.controlCharacter)),
        ("GET / HTTP/1.1\r\nHost: a\r\nBad\u{7f}Name: 1\r\n\r\n", .framing(.controlCharacter)),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{7f}\r\n\r\n", .framing(.controlCharacter)),
        ("GET / HTTP/1.1\r\nHost: a\r\nNa(me: 1\r\n\r\n", .invalidFieldName),
        ("GET /\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", .invalidHost),
        ("GET a HTTP/1.1\r\nHost: a\r\n\r\n", .malformedTarget),
        ("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", .framing(.invalidConnectTarget)),
    ])
    func theRequestLineAndHostAreChecked(text: String, violation: RequestParser.BrokenRule) {
        #expect(Self.read(Array(text.utf8)).violation == violation)
        #expect(Self.read(Array(text.utf8), piece: 1).violation == violation)
    }

    @Test func aHeadPastItsLimitsIs431() {
        let limits = RequestParser.Limits(maxHeadBytes: 256, maxFields: 4)
        let long = "GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + String(repeating: "v", count: 300) + "\r\n\r\n"
        let many = "GET / HTTP/1.1\r\nHost: a\r\n" + (1...4).map { "X-\($0): 1\r\n" }.joined() + "\r\n"
        for text in [long, many] {
            let reading = Self.read(Array(text.utf8), piece: 9, limits: limits)
            #expect(
                reading.violation == .headTooLarge && reading.violation.map(HTTPViolation.init)?.status == 431,
                "\(reading)")
        }
        // A head that never ends is refused once it passes the limit, not when it ends.
        let endless = Array(("GET / HTTP/1.1\r\n" + String(repeating: "X: 1\r\n", count: 100)).utf8)
        #expect(Self.read(endless, piece: 3, limits: limits).violation == .headTooLarge)
        #expect(Self.read(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8), limits: limits).violation == nil)
    }

    @Test(arguments: [nil, 1, 7] as [Int?])
    func aLongRequestLineIs414AndLongTrailersAre431(piece: Int?) {
        let limits = RequestParser.Limits(maxHeadBytes: 512, maxFields: 8, maxRequestLineBytes: 64)
        let line = Array("GET /\(String(repeating: "a", count: 80)) HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let reading = Self.read(line, piece: piece, limits: limits)
        #expect(reading.violation == .requestLineTooLong && reading.violation.map(HTTPViolation.init)?.status == 414)
        // A line of exactly the limit (64 bytes) is read; one byte more is not.
        let fits = Array("GET /\(String(repeating: "a", count: 50)) HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        #expect(Self.read(fits, piece: piece, limits: limits).violation == nil)
        let over = Array("GET /\(String(repeating: "a", count: 51)) HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        #expect(Self.read(over, piece: piece, limits: limits).violation == .requestLineTooLong)
        let trailers = (0..<40).map { "X-\($0): trailer value\r\n" }.joined()
        let chunked = Array(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\(trailers)\r\n".utf8)
        #expect(Self.read(chunked, piece: piece, limits: limits).violation == .headTooLarge)
    }

    @Test func aViolationIsStickyAndConsumesEverything() {
        var parser = RequestParser()
        let bad = Array("GET / HTTP/1.1\nHost: a\n\n".utf8)
        let first = bad.withUnsafeBytes { parser.parse($0) }
        #expect(first.event == .violation(.framing(.bareLineFeed)) && first.consumed == bad.count)
        let again = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8).withUnsafeBytes { parser.parse($0) }
        #expect(again.event == .violation(.framing(.bareLineFeed)))
    }

    @Test func bodiesAreHandedOutWithoutCopiesAndBetweenRequestsIsKnown() {
        var parser = RequestParser()
        #expect(parser.isBetweenRequests)
        let input = Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nwxyz".utf8)
        let head = input.withUnsafeBytes { parser.parse($0) }
        guard case .head = head.event else { return #expect(Bool(false), "\(head)") }
        #expect(!parser.isBetweenRequests)
        let rest = Array(input[head.consumed...])
        let body = rest.withUnsafeBytes { parser.parse($0) }
        #expect(body.event == .body(0..<4) && body.consumed == 4)
        #expect([UInt8]().withUnsafeBytes { parser.parse($0) }.event == .end)
        #expect(parser.isBetweenRequests)
    }
}
