/// The message framing of a connection's requests, checked strictly on the raw bytes as they
/// arrive: the core of ``RequestParser``, which passes every byte through it, so the two can
/// never frame a message differently. Lenient parsers read some bytes otherwise
/// (`Content-Length: +4`, a chunk size `0x4` or ` 4`, bare LF line ends, a second
/// `Transfer-Encoding`, a body on a HEAD read as the next request...): a front proxy that frames
/// such a request differently could smuggle one past another hop. Whatever two readers could
/// read differently is a violation here; the server answers it 400 and closes.
///
/// A streaming state machine over the pipelined requests of one connection, fed with slices of
/// its bytes in order, cut anywhere (one byte at a time included): the state after a sequence
/// of bytes does not depend on how it was cut. Pure Swift, no allocation: lines are searched a
/// word at a time for their control bytes, bodies are skipped by count (never scanned), and
/// only the first ``lineBufferCapacity`` bytes of each head or trailer line are kept (enough
/// for the name and value of `Content-Length` and `Transfer-Encoding`; those two are refused
/// when longer).
///
/// The rules, for requests (this is the server side):
/// - Head and trailer lines end in CRLF. A bare LF, a CR not followed by LF, a NUL or any other
///   control byte but HTAB is a violation (a C string ends at a NUL, so `a\0b` would be `a` to
///   a reader in C). Empty lines (CRLF) before a request line are tolerated (RFC 9112 2.2).
/// - A header line starting with SP or HTAB (obs-fold), without a colon, or with whitespace
///   before its colon is a violation.
/// - `Content-Length` (names compare case-insensitively) is 1 to 18 ASCII digits between
///   optional SP/HTAB; repeated, it must be the same digits.
/// - `Transfer-Encoding` is at most one line whose value is `chunked` (any case; leading SP and
///   trailing SP/HTAB trimmed, a leading HTAB is refused), never with a `Content-Length`, only
///   in an HTTP/1.1 request.
/// - No body is read for HEAD, TRACE or a method the server does not know (method names are
///   case sensitive): for those, a `Transfer-Encoding` or a `Content-Length` other than 0 is a
///   violation, as it is for CONNECT (RFC 9110 9.3.6: no content).
/// - Chunks: the size is 1 to 16 hex digits, optionally followed by `;` and extensions (any
///   byte but CR and LF, ignored), then CRLF, at most ``chunkLineLimit`` bytes; the data is
///   followed by CRLF exactly; the last chunk by trailer lines (as header lines, without
///   `Content-Length` or `Transfer-Encoding`) and an empty line.
/// - A request with neither header has no body.
///
/// A violation is sticky: later bytes are ignored. ``stopScanning()`` ends the scan for good
/// (bytes that are not HTTP any more). By default a CONNECT head is followed by more HTTP (a
/// refused CONNECT leaves the connection to further requests; a granted tunnel starts a new
/// parser inside its TLS). ``AfterConnect/passThrough`` stops the scan after a CONNECT head
/// instead, for a stream that carries opaque tunnel bytes.
struct RequestFraming: Sendable, Equatable {
    /// What follows a CONNECT head (without a body, or it is a violation).
    enum AfterConnect: Sendable, Equatable {
        /// More requests: the stream is still HTTP.
        case keepScanning
        /// Opaque tunnel bytes: the scan stops.
        case passThrough
        /// No CONNECT is served here (a listener without tunnels): its request line is a
        /// violation (answered 400 and closed).
        case refuse
    }

    /// The state after the bytes consumed so far.
    enum Verdict: Sendable, Equatable {
        /// Nothing wrong yet: keep feeding.
        case scanning
        /// No more scanning: after ``stopScanning()``, or a CONNECT head with
        /// ``AfterConnect/passThrough``.
        case passThrough
        /// Refuse the connection (sticky).
        case violated(BrokenRule)
    }

    /// Bytes kept of each head or trailer line: a `Transfer-Encoding` or `Content-Length` line
    /// longer than this is a violation.
    static let lineBufferCapacity = LineBuffer.capacity
    /// Most bytes of a chunk size line (size and extensions, CRLF excluded).
    static let chunkLineLimit = 128

    enum Stage: Sendable, Equatable {
        /// Request line (or the empty lines before it) and header lines.
        case head
        /// `remaining` bytes of a Content-Length body.
        case fixedBody(UInt64)
        case chunkSize
        case chunkExtension
        case chunkData(UInt64)
        /// The CRLF after chunk data.
        case chunkDataEnd(sawCR: Bool)
        /// Trailer lines after the last chunk.
        case trailer
        case passThrough
        case violated(BrokenRule)
    }

    /// What is done with a body, by the request's method.
    enum MethodKind: Sendable, Equatable {
        /// GET, POST, PUT, PATCH, DELETE, OPTIONS: read by Content-Length or chunked.
        case readsBody
        /// HEAD, TRACE, unknown: no body is read, whatever the headers say.
        case ignoresBody
        case connect
    }

    let afterConnect: AfterConnect
    var stage = Stage.head
    /// Requests whose head and body were framed completely.
    private(set) var requestsFramed = 0

    // The current line (head or trailer).
    var line = LineBuffer()
    /// Bytes of the line so far, its CR and LF excluded (only the first ones are in `line`).
    var lineLength = 0
    /// The last byte was a CR (in a line or a chunk size line): the next one must be LF.
    var pendingCR = false
    /// The last eight bytes of the request line, the last one lowest.
    var lineTail: UInt64 = 0

    // The current request.
    var sawRequestLine = false
    var method = MethodKind.readsBody
    var isHTTP11 = false
    var contentLength: UInt64?
    var contentLengthDigits = 0
    var chunked = false

    /// A CONNECT request line's bytes past ``LineBuffer/capacity`` (at most
    /// ``connectLineLimit`` in all): its target is checked whole. Empty for every other line.
    var connectOverflow: [UInt8] = []
    /// Longest CONNECT request line read: a name of 253 bytes, a port, the version.
    static let connectLineLimit = 300

    // The current chunk size line.
    var chunkDigits = 0
    var chunkSize: UInt64 = 0
    var chunkLineLength = 0

    init(afterConnect: AfterConnect = .keepScanning) {
        self.afterConnect = afterConnect
    }

    var verdict: Verdict {
        switch stage {
        case let .violated(violation): .violated(violation)
        case .passThrough: .passThrough
        default: .scanning
        }
    }

    var isViolated: Bool { violation != nil }

    var violation: BrokenRule? {
        if case let .violated(violation) = stage { return violation }
        return nil
    }

    /// Whether bytes are still looked at (neither violated nor passing through): while it is
    /// true, every byte of the connection must be consumed, in order.
    var isScanning: Bool { verdict == .scanning }

    /// Between two requests: nothing of the next one seen yet (empty lines aside).
    var isBetweenRequests: Bool {
        stage == .head && !sawRequestLine && lineLength == 0 && !pendingCR
    }

    /// Stops the scan for good (the bytes that follow are not HTTP). A violation stays.
    mutating func stopScanning() {
        if !isViolated { stage = .passThrough }
    }

    /// Consumes the next bytes of the connection.
    @discardableResult
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        var i = 0
        let n = bytes.count
        while i < n {
            switch stage {
            case .head, .trailer:
                i = consumeLines(bytes, from: i)
            case let .fixedBody(remaining):
                let taken = min(UInt64(n - i), remaining)
                i += Int(taken)
                if taken == remaining {
                    finishRequest()
                } else {
                    stage = .fixedBody(remaining - taken)
                }
            case .chunkSize, .chunkExtension:
                i = consumeChunkLine(bytes, from: i)
            case let .chunkData(remaining):
                let taken = min(UInt64(n - i), remaining)
                i += Int(taken)
                stage = taken == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining - taken)
            case let .chunkDataEnd(sawCR):
                let byte = bytes[i]
                i += 1
                if !sawCR && byte == Byte.cr {
                    stage = .chunkDataEnd(sawCR: true)
                } else if sawCR && byte == Byte.lf {
                    startChunkLine()
                } else {
                    stage = .violated(.missingChunkTerminator)
                }
            case .passThrough, .violated:
                return verdict
            }
        }
        return verdict
    }

    /// The empty line after the headers.
    mutating func endHead() {
        let hasBody = chunked || (contentLength ?? 0) > 0
        if hasBody && method != .readsBody {
            stage = .violated(.unexpectedBody)
        } else if method == .connect && afterConnect == .passThrough {
            requestsFramed += 1
            stage = .passThrough
        } else if chunked {
            startChunkLine()
        } else if let contentLength, contentLength > 0 {
            stage = .fixedBody(contentLength)
        } else {
            finishRequest()
        }
    }

    mutating func finishRequest() {
        requestsFramed += 1
        stage = .head
        sawRequestLine = false
        method = .readsBody
        isHTTP11 = false
        contentLength = nil
        contentLengthDigits = 0
        chunked = false
        pendingCR = false
        resetLine()
    }
}
