import CloakCore

/// A strict HTTP/1.1 response parser: bytes in, one answer out, as a value type with no I/O (the
/// connection feeds it what it reads; tests and the `response` fuzzer feed it bytes).
///
/// Strict where a lenient reading could make Cloak and a later hop frame a message differently
/// (response splitting, a desynchronised pooled connection), RFC 9112 throughout:
/// - every line ends in CRLF: a bare LF or a bare CR is refused, and so is obsolete line folding;
/// - a field name is a token with the colon right after it; a value has no control byte but HTAB;
/// - `Content-Length` is digits only (no sign, no list); several must agree; one with
///   `Transfer-Encoding` is refused; the only transfer coding is `chunked`;
/// - chunk sizes are hex digits (an extension after `;` is allowed), each chunk ends in CRLF;
/// - the head, and the body, have limits; interim (1xx) answers are skipped, `101` is refused.
///
/// An answer without a length is read until the peer closes (``close()``), and its connection is
/// never reused.
struct ResponseParser {
    /// Why an answer is not usable; its description names the rule, never the bytes.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case bareLineFeed
        case bareCarriageReturn
        case invalidStatusLine
        case switchingProtocols
        case obsoleteLineFolding
        case invalidFieldName
        case invalidFieldValue
        case invalidContentLength
        case conflictingContentLength
        case lengthAndTransferEncoding
        case unsupportedTransferCoding
        case invalidChunk
        case headTooLarge
        case bodyTooLarge
        case endedEarly

        var description: String {
            switch self {
            case .bareLineFeed: return "a line ends in a bare LF"
            case .bareCarriageReturn: return "a bare CR"
            case .invalidStatusLine: return "an invalid status line"
            case .switchingProtocols: return "101 Switching Protocols was not asked for"
            case .obsoleteLineFolding: return "obsolete line folding"
            case .invalidFieldName: return "an invalid header name"
            case .invalidFieldValue: return "a control character in a header value"
            case .invalidContentLength: return "an invalid Content-Length"
            case .conflictingContentLength: return "conflicting Content-Length headers"
            case .lengthAndTransferEncoding: return "both Content-Length and Transfer-Encoding"
            case .unsupportedTransferCoding: return "a transfer coding other than chunked"
            case .invalidChunk: return "an invalid chunk"
            case .headTooLarge: return "the head is too large"
            case .bodyTooLarge: return "the answer is too large"
            case .endedEarly: return "the connection closed before the answer's end"
            }
        }
    }

    static let maxLineBytes = 16 << 10
    static let maxFields = 128

    /// How many head bytes (status lines, fields, interim answers and trailers together) and body
    /// bytes an answer may have.
    let maxHeadBytes: Int
    let maxBodyBytes: Int
    /// Whether the request was `HEAD`: its answer has no body, whatever its head says.
    let bodyless: Bool

    private enum Phase {
        case statusLine
        case fields
        case body(remaining: Int)
        case untilClose
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd(sawCR: Bool)
        case trailers
        case done
    }

    private var phase = Phase.statusLine
    private var line: [UInt8] = []
    private var headBytes = 0
    private var framingBytes = 0
    private var receivedAny = false

    private(set) var status = 0
    private(set) var isHTTP10 = false
    private(set) var headers: [(name: String, value: String)] = []
    private(set) var body: [UInt8] = []
    /// Whether the connection may carry another exchange: a framed answer, HTTP/1.1, no
    /// `Connection: close`. Known once the answer is complete.
    private(set) var reusable = false

    init(maxHeadBytes: Int = 64 << 10, maxBodyBytes: Int, bodyless: Bool = false) {
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
        self.bodyless = bodyless
    }

    var isComplete: Bool {
        if case .done = phase { return true }
        return false
    }

    /// Whether any byte of an answer has come (a pooled connection closed by its peer before
    /// answering is not a broken answer but no answer).
    var hasStarted: Bool { receivedAny }

    /// Reads `bytes`; returns how many it used once the answer is complete (bytes after it are
    /// not part of it), nil while it needs more.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> Int? {
        if !bytes.isEmpty { receivedAny = true }
        var i = 0
        let n = bytes.count
        while i < n {
            switch phase {
            case .statusLine, .fields, .chunkSize, .trailers:
                // One line: up to its LF, found with memchr.
                let rest = UnsafeRawBufferPointer(rebasing: bytes[i...])
                let lf = rest.firstIndex(of: 10)
                let end = lf ?? rest.count
                try account(end + (lf == nil ? 0 : 1))
                if lf != nil && line.isEmpty {
                    // The whole line is in this read (almost always): read in place.
                    i += end + 1
                    guard end > 0, rest[end - 1] == 13 else { throw .bareLineFeed }
                    try endOfLine(UnsafeRawBufferPointer(rebasing: rest[..<(end - 1)]))
                    continue
                }
                line.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<end]))
                if line.count > Self.maxLineBytes { throw .headTooLarge }
                guard lf != nil else { return nil }
                i += end + 1
                guard line.last == 13 else { throw .bareLineFeed }
                line.removeLast()
                let whole = line
                line.removeAll(keepingCapacity: true)
                try whole.withUnsafeBytes { l in Result { () throws(Failure) in try endOfLine(l) } }.get()
            case let .body(remaining):
                let take = min(remaining, n - i)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                if take == remaining { phase = .done } else { phase = .body(remaining: remaining - take) }
            case .untilClose:
                let take = n - i
                guard body.count + take <= maxBodyBytes else { throw .bodyTooLarge }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i...]))
                i = n
            case let .chunkData(remaining):
                let take = min(remaining, n - i)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                phase = take == remaining ? .chunkEnd(sawCR: false) : .chunkData(remaining: remaining - take)
            case let .chunkEnd(sawCR):
                let b = bytes[i]
                i += 1
                if !sawCR {
                    guard b == 13 else { throw b == 10 ? .bareLineFeed : .invalidChunk }
                    phase = .chunkEnd(sawCR: true)
                } else {
                    guard b == 10 else { throw .bareCarriageReturn }
                    phase = .chunkSize
                }
            case .done:
                return i
            }
            if case .done = phase { return i }
        }
        if case .done = phase { return i }
        return nil
    }

    /// The peer closed the connection: completes an answer read until the close; throws
    /// ``Failure/endedEarly`` for one that had begun and was not complete.
    mutating func close() throws(Failure) {
        switch phase {
        case .done:
            return
        case .untilClose:
            reusable = false
            phase = .done
        default:
            throw .endedEarly
        }
    }

    // MARK: Lines

    /// Counts a line's bytes: the head's and the trailers' against ``maxHeadBytes``, chunk-size
    /// lines against ``maxBodyBytes`` (a body of many small chunks is bounded like any body).
    private mutating func account(_ count: Int) throws(Failure) {
        if case .chunkSize = phase {
            framingBytes += count
            if framingBytes > maxBodyBytes { throw .bodyTooLarge }
            return
        }
        headBytes += count
        if headBytes > maxHeadBytes { throw .headTooLarge }
    }

    /// One line, without its CRLF.
    private mutating func endOfLine(_ line: UnsafeRawBufferPointer) throws(Failure) {
        if line.contains(13) { throw .bareCarriageReturn }
        switch phase {
        case .statusLine:
            try statusLine(line)
        case .fields:
            if line.isEmpty { return try endOfHead() }
            if headers.isEmpty { headers.reserveCapacity(12) }
            headers.append(try Self.field(line))
            if headers.count > Self.maxFields { throw .headTooLarge }
        case .chunkSize:
            try chunkSize(line)
        case .trailers:
            // Trailer fields are checked like header fields and dropped (nothing forwards them).
            if line.isEmpty {
                finish(reusableFraming: true)
            } else {
                _ = try Self.field(line)
            }
        default:
            return
        }
    }

    /// `HTTP/1.1 200 OK`: version, a space, three digits, then nothing or a space and a reason.
    private mutating func statusLine(_ l: UnsafeRawBufferPointer) throws(Failure) {
        guard l.count >= 12, l[0] == 72, l[1] == 84, l[2] == 84, l[3] == 80, l[4] == 47, l[5] == 49, l[6] == 46,
            l[7] == 49 || l[7] == 48, l[8] == 32, (49...53).contains(l[9]), (48...57).contains(l[10]),
            (48...57).contains(l[11])
        else { throw .invalidStatusLine }
        if l.count > 12 {
            guard l[12] == 32, !l[13...].contains(where: HTTPSyntax.isControlByte) else { throw .invalidStatusLine }
        }
        isHTTP10 = l[7] == 48
        status = Int(l[9] - 48) * 100 + Int(l[10] - 48) * 10 + Int(l[11] - 48)
        if status == 101 { throw .switchingProtocols }
        headers.removeAll()
        phase = .fields
    }

    /// `name: value`, the value without surrounding spaces.
    private static func field(_ line: UnsafeRawBufferPointer) throws(Failure) -> (name: String, value: String) {
        if line[0] == 32 || line[0] == 9 { throw .obsoleteLineFolding }
        guard let colon = line.firstIndex(of: 58), colon > 0 else { throw .invalidFieldName }
        guard line[..<colon].allSatisfy(HTTPSyntax.isTokenByte) else { throw .invalidFieldName }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == 32 || line[start] == 9 { start += 1 }
        while end > start, line[end - 1] == 32 || line[end - 1] == 9 { end -= 1 }
        if line[start..<end].contains(where: HTTPSyntax.isControlByte) { throw .invalidFieldValue }
        return (
            String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
            String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
        )
    }

    /// The fields are in: decides how the body is framed (RFC 9112 §6.3).
    private mutating func endOfHead() throws(Failure) {
        if status < 200 {
            // An interim answer (100 Continue, 103 Early Hints): the real one follows.
            phase = .statusLine
            return
        }
        var length: Int?
        var codings: [Substring] = []
        for (name, value) in headers {
            switch name.utf8.count {
            case 14 where name.caseInsensitiveEquals("content-length"):
                guard let parsed = Self.contentLength(value) else { throw .invalidContentLength }
                if let length, length != parsed { throw .conflictingContentLength }
                length = parsed
            case 17 where name.caseInsensitiveEquals("transfer-encoding"):
                codings += value.split(separator: ",", omittingEmptySubsequences: false)
            default:
                break
            }
        }
        let framedByCodings = !codings.isEmpty
        if framedByCodings {
            if length != nil { throw .lengthAndTransferEncoding }
            guard !isHTTP10, codings.count == 1, Self.trimmed(codings[0]).caseInsensitiveEquals("chunked") else {
                throw .unsupportedTransferCoding
            }
        }
        // RFC 9112 §9.3: `Connection: close`, or HTTP/1.0 without keep-alive, ends it.
        let keepsConnection = !HTTPSyntax.asksToClose(headers, isHTTP10: isHTTP10)
        if bodyless || status == 204 || status == 304 {
            return finish(reusableFraming: keepsConnection)
        }
        if framedByCodings {
            phase = .chunkSize
            reusable = keepsConnection  // confirmed at the last chunk
            return
        }
        guard let length else {
            phase = .untilClose
            return
        }
        if length > maxBodyBytes { throw .bodyTooLarge }
        // Room for what is announced, up to 64 KiB: a length alone does not get 8 MiB.
        body.reserveCapacity(min(length, 64 << 10))
        if length == 0 { return finish(reusableFraming: keepsConnection) }
        reusable = keepsConnection
        phase = .body(remaining: length)
    }

    private mutating func finish(reusableFraming: Bool) {
        if case .trailers = phase {
            // `reusable` was decided at the head.
        } else {
            reusable = reusableFraming
        }
        phase = .done
    }

    /// `1*HEXDIG [ ; extension ]`; 0 ends the body (trailers follow).
    private mutating func chunkSize(_ line: UnsafeRawBufferPointer) throws(Failure) {
        var size = 0
        var digits = 0
        for b in line {
            guard let v = HTTPSyntax.hexValue(b) else { break }
            digits += 1
            guard digits <= 15 else { throw .invalidChunk }
            size = size << 4 | Int(v)
        }
        guard digits > 0 else { throw .invalidChunk }
        if digits < line.count {
            // Only an extension may follow: optional spaces, then `;`.
            var rest = UnsafeRawBufferPointer(rebasing: line[digits...]).drop { $0 == 32 || $0 == 9 }
            guard rest.first == 59 else { throw .invalidChunk }
            rest = rest.dropFirst()
            if rest.contains(where: HTTPSyntax.isControlByte) { throw .invalidChunk }
        }
        if size == 0 {
            phase = .trailers
            return
        }
        guard body.count + size <= maxBodyBytes else { throw .bodyTooLarge }
        phase = .chunkData(remaining: size)
    }

    /// The value of `Content-Length`: 1 to 15 digits, nothing else.
    static func contentLength(_ value: String) -> Int? {
        let utf8 = value.utf8
        guard (1...15).contains(utf8.count) else { return nil }
        var n = 0
        for b in utf8 {
            guard (48...57).contains(b) else { return nil }
            n = n * 10 + Int(b - 48)
        }
        return n
    }

    /// `text` without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

}
