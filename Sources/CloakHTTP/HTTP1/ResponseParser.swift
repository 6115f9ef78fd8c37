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

    enum Phase {
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

    var phase = Phase.statusLine
    var line: [UInt8] = []
    var headBytes = 0
    var framingBytes = 0
    var receivedAny = false

    var status = 0
    var isHTTP10 = false
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Whether the connection may carry another exchange: a framed answer, HTTP/1.1, no
    /// `Connection: close`. Known once the answer is complete.
    var reusable = false

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

}
