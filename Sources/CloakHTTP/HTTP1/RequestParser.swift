/// Reads a connection's requests into heads, body pieces and ends: the server side's parser,
/// grown from ``RequestFraming``, whose rules it keeps whole (every byte still passes through
/// it, so the two can never frame a message differently). What it adds:
/// - the head, collected while the framing checks it (at most ``Limits/maxHeadBytes`` bytes and
///   ``Limits/maxFields`` field lines: past either, 431), then read into a ``RequestHead``: the
///   request line is `method SP target SP HTTP/1.x` (a method of token characters, a target of
///   visible ASCII), and an HTTP/1.1 request has exactly one `Host` (RFC 9112 3.2: else 400);
/// - the body, handed out as ranges of the bytes given (never copied): a `Content-Length` body
///   as it arrives, a chunked one without its sizes, extensions and trailers;
/// - the end of each message, so pipelined requests come out one after another.
///
/// Pure and incremental: ``parse(_:)`` takes the bytes the connection has, returns how many it
/// consumed and one event; the caller calls again with the rest (an event of nothing new,
/// ``Event/needMore``, consumes everything it was given). The events do not depend on how the
/// bytes were cut.
struct RequestParser: Sendable {
    struct Limits: Sendable, Equatable {
        /// Bytes of a head, request line and CRLFs included (431 past it).
        var maxHeadBytes = 16 << 10
        /// Field lines of a head (431 past it).
        var maxFields = 100
        /// Bytes of the request line, CRLF excluded (414 past it; RFC 9112 3 asks for at least
        /// 8000). At most the head's limit.
        var maxRequestLineBytes = 8 << 10

        init(maxHeadBytes: Int = 16 << 10, maxFields: Int = 100, maxRequestLineBytes: Int = 8 << 10) {
            self.maxHeadBytes = maxHeadBytes
            self.maxFields = maxFields
            self.maxRequestLineBytes = min(maxRequestLineBytes, maxHeadBytes)
        }
    }

    enum Event: Sendable, Equatable {
        /// Everything given was consumed: feed more.
        case needMore
        case head(RequestHead)
        /// Body bytes: this range of the bytes given to the call that returned it.
        case body(Range<Int>)
        /// The message is complete (a body's last byte, or a head without a body, came before).
        case end
        /// A CONNECT head was read on a parser made with ``RequestFraming/AfterConnect/passThrough``:
        /// the bytes from here on are the tunnel's (every later call says so again, consuming none).
        case tunnel
        /// The stream is refused (sticky): answered with its ``HTTPViolation``'s status, then closed.
        case violation(BrokenRule)
    }

    /// The rule a request broke (the layer's error is the ``HTTPViolation`` it becomes, which
    /// holds the status). The descriptions name the rule, never a byte of the request.
    enum BrokenRule: Error, Sendable, Equatable, CustomStringConvertible {
        case framing(RequestFraming.BrokenRule)
        case malformedRequestLine
        /// A field name that is not a token (the framing scan leaves names to the parser).
        case invalidFieldName
        case unsupportedVersion
        case headTooLarge
        case requestLineTooLong
        /// A target that fits none of the forms its method may use (``RequestTarget``).
        case malformedTarget
        case missingHost
        case repeatedHost
        case invalidHost

        var description: String {
            switch self {
            case .framing(let violation): violation.description
            case .malformedRequestLine: "the request line is not method, target and version"
            case .invalidFieldName: "a field name that is not a token"
            case .unsupportedVersion: "a major version other than HTTP/1"
            case .headTooLarge: "the request head or trailer section is too large"
            case .requestLineTooLong: "the request line is too long"
            case .malformedTarget: "the request target fits no form its method may use"
            case .missingHost: "an HTTP/1.1 request without Host"
            case .repeatedHost: "more than one Host field"
            case .invalidHost: "a Host value that is not host[:port]"
            }
        }
    }

    private var framing: RequestFraming
    let limits: Limits
    /// The current head's bytes, empty lines before the request line left out.
    private var headBytes: [UInt8] = []
    /// A message ended with the last event given; its end is the next event.
    private var endPending = false
    private var refused: BrokenRule?
    /// The current head's request line has ended (its LF is in ``headBytes``).
    private var requestLineEnded = false
    /// Bytes of the current message's trailer section so far (counted against the head limit).
    private var trailerBytes = 0

    init(limits: Limits = Limits(), afterConnect: RequestFraming.AfterConnect = .keepScanning) {
        precondition(limits.maxHeadBytes > 0 && limits.maxFields >= 0, "a head limit below one byte")
        self.limits = limits
        self.framing = RequestFraming(afterConnect: afterConnect)
    }

    /// Whether nothing of a next request has been read (keep-alive: idle between requests).
    var isBetweenRequests: Bool {
        refused == nil && !endPending && framing.isBetweenRequests && headBytes.isEmpty
    }

    /// Reads from `bytes`: how many were consumed, and what they came to.
    mutating func parse(_ bytes: UnsafeRawBufferPointer) -> (consumed: Int, event: Event) {
        if let refused { return (bytes.count, .violation(refused)) }
        if endPending {
            endPending = false
            return (0, .end)
        }
        var i = 0
        let n = bytes.count
        while true {
            let framed = framing.requestsFramed
            switch framing.stage {
            case .violated(let violation):
                return refuse(.framing(violation), count: n)
            case .passThrough:
                return (i, .tunnel)
            case .fixedBody(let remaining):
                guard i < n else { return (n, .needMore) }
                let end = i + Int(min(remaining, UInt64(n - i)))
                framing.consume(UnsafeRawBufferPointer(rebasing: bytes[i..<end]))
                endPending = framing.requestsFramed > framed
                return (end, .body(i..<end))
            case .chunkData(let remaining):
                guard i < n else { return (n, .needMore) }
                let end = i + Int(min(remaining, UInt64(n - i)))
                framing.consume(UnsafeRawBufferPointer(rebasing: bytes[i..<end]))
                return (end, .body(i..<end))
            case .head:
                guard i < n else { return (n, .needMore) }
                // At most the limit's bytes of a head reach the framing, however the bytes were
                // cut: past it, the head is too large, unless they already broke a rule.
                let end = Self.lineEnd(bytes, from: i)
                let take = min(end - i, limits.maxHeadBytes - headBytes.count)
                let segment = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)])
                headBytes.append(contentsOf: segment)
                framing.consume(segment)
                i += take
                if case .violated(let violation) = framing.stage { return refuse(.framing(violation), count: n) }
                if !requestLineEnded {
                    let lineEnded = headBytes.last == UInt8(ascii: "\n")
                    // Its CRLF is not counted, nor a CR whose LF is still to come.
                    let lineLength =
                        headBytes.count - (lineEnded ? 2 : headBytes.last == UInt8(ascii: "\r") ? 1 : 0)
                    if lineLength > limits.maxRequestLineBytes, framing.sawRequestLine || !lineEnded {
                        return refuse(.requestLineTooLong, count: n)
                    }
                    requestLineEnded = lineEnded && framing.sawRequestLine
                }
                if !framing.sawRequestLine && framing.requestsFramed == framed && headBytes.last == UInt8(ascii: "\n") {
                    // An empty line before the request line.
                    headBytes.removeAll(keepingCapacity: headBytes.capacity <= 1 << 10)
                    continue
                }
                guard i == end else { return refuse(.headTooLarge, count: n) }
                guard framing.stage != .head || framing.requestsFramed > framed else { continue }
                // The head ended (its empty line) with this line.
                let read = readHead()
                if case .failure(let violation) = read { return refuse(violation, count: n) }
                headBytes.removeAll(keepingCapacity: headBytes.capacity <= 1 << 10)
                requestLineEnded = false
                trailerBytes = 0
                switch read {
                case .failure: preconditionFailure("refused above")
                case .success(let head):
                    endPending = framing.requestsFramed > framed
                    return (i, .head(head))
                }
            case .chunkSize, .chunkExtension, .chunkDataEnd, .trailer:
                guard i < n else { return (n, .needMore) }
                var end = Self.lineEnd(bytes, from: i)
                if framing.stage == .trailer {
                    // Trailer lines count against the head's limit, however they are cut.
                    end = min(end, i + limits.maxHeadBytes - trailerBytes)
                    trailerBytes += end - i
                }
                framing.consume(UnsafeRawBufferPointer(rebasing: bytes[i..<end]))
                i = end
                if case .violated(let violation) = framing.stage { return refuse(.framing(violation), count: n) }
                if framing.requestsFramed > framed {
                    trailerBytes = 0
                    return (i, .end)
                }
                if framing.stage == .trailer && trailerBytes >= limits.maxHeadBytes && i < n {
                    return refuse(.headTooLarge, count: n)
                }
            }
        }
    }

    /// The method of the request being read when the stream was refused, once its request line
    /// was whole (a refused HEAD is answered without a body).
    private(set) var refusedMethod: String?

    private mutating func refuse(_ violation: BrokenRule, count: Int) -> (consumed: Int, event: Event) {
        refused = violation
        if requestLineEnded || framing.sawRequestLine, let space = headBytes.firstIndex(of: UInt8(ascii: " ")) {
            refusedMethod = String(decoding: headBytes[..<space], as: UTF8.self)
        }
        return (count, .violation(violation))
    }

    /// The index after the next LF from `start`, or the end.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var k = start
        while k < bytes.count {
            if bytes[k] == UInt8(ascii: "\n") { return k + 1 }
            k += 1
        }
        return bytes.count
    }

    /// The collected head (request line, field lines, empty line; every line ending in CRLF and
    /// checked by the framing) as a ``RequestHead``.
    private func readHead() -> Result<RequestHead, BrokenRule> {
        headBytes.withUnsafeBufferPointer { Self.readHead($0, limits: limits, framing: framing) }
    }

    /// Reads a whole head: one pass over its lines, each field a name and a value string.
    private static func readHead(
        _ bytes: UnsafeBufferPointer<UInt8>, limits: Limits, framing: RequestFraming
    ) -> Result<RequestHead, BrokenRule> {
        // Every line ends in CRLF (the framing saw to it); the last line is the empty one.
        var lineStart = 0
        func nextLine() -> Range<Int>? {
            guard lineStart < bytes.count else { return nil }
            var k = lineStart
            while bytes[k] != UInt8(ascii: "\n") { k += 1 }
            defer { lineStart = k + 1 }
            return lineStart..<(k - 1)
        }
        guard let requestLine = nextLine() else { return .failure(.malformedRequestLine) }
        // method SP target SP HTTP/1.x
        guard let firstSpace = bytes[requestLine].firstIndex(of: UInt8(ascii: " ")),
            let secondSpace = bytes[(firstSpace + 1)..<requestLine.upperBound].firstIndex(of: UInt8(ascii: " "))
        else { return .failure(.malformedRequestLine) }
        let methodBytes = UnsafeBufferPointer(rebasing: bytes[requestLine.lowerBound..<firstSpace])
        let targetBytes = UnsafeBufferPointer(rebasing: bytes[(firstSpace + 1)..<secondSpace])
        let version = UnsafeBufferPointer(rebasing: bytes[(secondSpace + 1)..<requestLine.upperBound])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(HTTPSyntax.isTokenByte), !targetBytes.isEmpty,
            targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { return .failure(.malformedRequestLine) }
        guard version.count == 8, version.starts(with: "HTTP/".utf8), version[6] == UInt8(ascii: "."),
            version[5] != UInt8(ascii: " "), version[7] != UInt8(ascii: " ")
        else { return .failure(.malformedRequestLine) }
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard digits.contains(version[5]), digits.contains(version[7]) else { return .failure(.malformedRequestLine) }
        // Any minor version of HTTP/1 is served as HTTP/1.1 (RFC 9112 2.3): HTTP/1.2 is 1.1's.
        guard version[5] == UInt8(ascii: "1") else { return .failure(.unsupportedVersion) }
        let isHTTP11 = version[7] != UInt8(ascii: "0")
        let method = String(decoding: methodBytes, as: UTF8.self)
        let targetText = String(decoding: targetBytes, as: UTF8.self)
        guard let target = RequestTarget.parse(targetText, bytes: targetBytes, method: method) else {
            return .failure(.malformedTarget)
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(8)
        var hosts = 0
        while let line = nextLine(), !line.isEmpty {
            guard headers.count < limits.maxFields else { return .failure(.headTooLarge) }
            // The framing saw the colon and a name before it; its characters are checked here.
            guard let colon = bytes[line].firstIndex(of: UInt8(ascii: ":")) else { return .failure(.invalidFieldName) }
            let name = UnsafeBufferPointer(rebasing: bytes[line.lowerBound..<colon])
            guard name.allSatisfy(HTTPSyntax.isTokenByte) else { return .failure(.invalidFieldName) }
            var lower = colon + 1
            var upper = line.upperBound
            while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
            while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
            let value = UnsafeBufferPointer(rebasing: bytes[lower..<upper])
            if name.count == 4, HTTPSyntax.lowercased(name[0]) == UInt8(ascii: "h"),
                HTTPSyntax.lowercased(name[1]) == UInt8(ascii: "o"),
                HTTPSyntax.lowercased(name[2]) == UInt8(ascii: "s"),
                HTTPSyntax.lowercased(name[3]) == UInt8(ascii: "t")
            {
                hosts += 1
                guard RequestTarget.isValidHost(value) else { return .failure(.invalidHost) }
            }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        if hosts > 1 { return .failure(.repeatedHost) }
        if isHTTP11 && hosts == 0 { return .failure(.missingHost) }
        let body: RequestHead.BodyFraming =
            framing.chunked ? .chunked : (framing.contentLength ?? 0) > 0 ? .length(framing.contentLength!) : .none
        var head = RequestHead(method: method, target: targetText, isHTTP11: isHTTP11, headers: headers, body: body)
        head.requestTarget = target
        return .success(head)
    }
}
