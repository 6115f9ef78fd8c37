/// The message framing of a connection's requests, checked strictly on the raw bytes as they
/// arrive, before evhttp parses them. libevent 2.1.12's parser is lenient where RFC 9112 is not
/// (`Content-Length: +4`, a chunk size `0x4` or ` 4`, bare LF line ends, a second
/// `Transfer-Encoding`, a body on a HEAD it then reads as the next request...): a front proxy
/// that frames such a request differently could smuggle one past it. Whatever the two could
/// read differently is a violation here; the loop answers it 400 and closes.
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
///   control byte but HTAB is a violation (evhttp's strings end at a NUL, so `a\0b` would be
///   `a` to it). Empty lines (CRLF) before a request line are tolerated (RFC 9112 2.2).
/// - A header line starting with SP or HTAB (obs-fold), without a colon, or with whitespace
///   before its colon is a violation.
/// - `Content-Length` (names compare case-insensitively) is 1 to 18 ASCII digits between
///   optional SP/HTAB; repeated, it must be the same digits.
/// - `Transfer-Encoding` is at most one line whose value is `chunked` (any case; leading SP and
///   trailing SP/HTAB trimmed, a leading HTAB is refused: evhttp would not trim it and would
///   not read the body as chunked), never with a `Content-Length`, only in an HTTP/1.1 request.
/// - evhttp reads no body for HEAD, TRACE or a method it does not know (method names are case
///   sensitive): for those, a `Transfer-Encoding` or a `Content-Length` other than 0 is a
///   violation, as it is for CONNECT (RFC 9110 9.3.6: no content).
/// - Chunks: the size is 1 to 16 hex digits, optionally followed by `;` and extensions (any
///   byte but CR and LF), then CRLF, at most ``chunkLineLimit`` bytes; the data is followed by
///   CRLF exactly; the last chunk by trailer lines (as header lines, without `Content-Length`
///   or `Transfer-Encoding`) and an empty line. evhttp itself refuses extensions: allowing them
///   here only leaves that refusal to it.
/// - A request with neither header has no body.
///
/// A violation is sticky: later bytes are ignored. ``stopScanning()`` ends the scan for good
/// (bytes that are not HTTP any more). By default a CONNECT head is followed by more HTTP: the
/// bytes of a connection's input buffer are always what evhttp parses next (a granted tunnel's
/// TLS is terminated below it, by ``ConnectionFilter``). ``AfterConnect/passThrough`` stops the scan
/// after a CONNECT head instead, for a stream that carries opaque tunnel bytes.
struct RequestFraming: Sendable, Equatable {
    /// What follows a CONNECT head (without a body, or it is a violation).
    enum AfterConnect: Sendable, Equatable {
        /// More requests: the stream is still HTTP to evhttp.
        case keepScanning
        /// Opaque tunnel bytes: the scan stops.
        case passThrough
    }

    /// Why a stream was refused. The descriptions name the rule, never a byte of the request.
    enum Violation: Sendable, Equatable, CustomStringConvertible {
        case bareLineFeed
        case bareCarriageReturn
        case controlCharacter
        case obsoleteLineFolding
        case malformedFieldLine
        case whitespaceBeforeColon
        case invalidContentLength
        case conflictingContentLength
        case framingFieldTooLong
        case unsupportedTransferEncoding
        case repeatedTransferEncoding
        case transferEncodingWithContentLength
        case transferEncodingBeforeHTTP11
        case unexpectedBody
        case invalidChunkSize
        case chunkLineTooLong
        case missingChunkTerminator
        case framingFieldInTrailer

        var description: String {
            switch self {
            case .bareLineFeed: "a line ends in LF without CR"
            case .bareCarriageReturn: "a CR is not followed by LF"
            case .controlCharacter: "a control character in a request head or trailer"
            case .obsoleteLineFolding: "a header line starts with whitespace (obs-fold)"
            case .malformedFieldLine: "a header line has no name or no colon"
            case .whitespaceBeforeColon: "whitespace between a header name and its colon"
            case .invalidContentLength: "Content-Length is not 1 to 18 digits"
            case .conflictingContentLength: "Content-Length headers disagree"
            case .framingFieldTooLong: "a Content-Length or Transfer-Encoding line is too long"
            case .unsupportedTransferEncoding: "Transfer-Encoding is not exactly chunked"
            case .repeatedTransferEncoding: "more than one Transfer-Encoding header"
            case .transferEncodingWithContentLength: "Transfer-Encoding with Content-Length"
            case .transferEncodingBeforeHTTP11: "Transfer-Encoding in a request that is not HTTP/1.1"
            case .unexpectedBody: "a body on a method read without one (HEAD, TRACE, CONNECT or unknown)"
            case .invalidChunkSize: "a chunk size is not 1 to 16 hex digits"
            case .chunkLineTooLong: "a chunk size line is too long"
            case .missingChunkTerminator: "chunk data is not followed by CRLF"
            case .framingFieldInTrailer: "Content-Length or Transfer-Encoding in a trailer"
            }
        }
    }

    /// The state after the bytes consumed so far.
    enum Verdict: Sendable, Equatable {
        /// Nothing wrong yet: keep feeding.
        case scanning
        /// No more scanning: after ``stopScanning()``, or a CONNECT head with
        /// ``AfterConnect/passThrough``.
        case passThrough
        /// Refuse the connection (sticky).
        case violated(Violation)
    }

    /// Bytes kept of each head or trailer line: a `Transfer-Encoding` or `Content-Length` line
    /// longer than this is a violation.
    static let lineBufferCapacity = LineBuffer.capacity
    /// Most bytes of a chunk size line (size and extensions, CRLF excluded).
    static let chunkLineLimit = 128

    private enum Stage: Sendable, Equatable {
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
        case violated(Violation)
    }

    /// What evhttp does with a body, by the request's method.
    private enum MethodKind: Sendable, Equatable {
        /// GET, POST, PUT, PATCH, DELETE, OPTIONS: read by Content-Length or chunked.
        case readsBody
        /// HEAD, TRACE, unknown: evhttp reads no body, whatever the headers say.
        case ignoresBody
        case connect
    }

    private let afterConnect: AfterConnect
    private var stage = Stage.head
    /// Requests whose head and body were framed completely.
    private(set) var requestsFramed = 0

    // The current line (head or trailer).
    private var line = LineBuffer()
    /// Bytes of the line so far, its CR and LF excluded (only the first ones are in `line`).
    private var lineLength = 0
    /// The last byte was a CR (in a line or a chunk size line): the next one must be LF.
    private var pendingCR = false
    /// The last eight bytes of the request line, the last one lowest.
    private var lineTail: UInt64 = 0

    // The current request.
    private var sawRequestLine = false
    private var method = MethodKind.readsBody
    private var isHTTP11 = false
    private var contentLength: UInt64?
    private var contentLengthDigits = 0
    private var chunked = false

    // The current chunk size line.
    private var chunkDigits = 0
    private var chunkSize: UInt64 = 0
    private var chunkLineLength = 0

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

    var violation: Violation? {
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

    // MARK: Lines (head and trailer)

    /// Consumes line bytes from `start` until the bytes end or the stage is no longer a line
    /// stage; returns where it stopped.
    private mutating func consumeLines(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        while i < n {
            if pendingCR {
                guard bytes[i] == Byte.lf else {
                    stage = .violated(.bareCarriageReturn)
                    return n
                }
                pendingCR = false
                i += 1
                endLine()
                guard stage == .head || stage == .trailer else { return i }
                continue
            }
            let control = Self.firstControlByte(bytes, from: i)
            if control > i { appendToLine(bytes, i..<control) }
            guard control < n else { return n }
            switch bytes[control] {
            case Byte.cr:
                pendingCR = true
            case Byte.htab:
                appendToLine(bytes, control..<(control + 1))
            case Byte.lf:
                stage = .violated(.bareLineFeed)
                return n
            default:
                stage = .violated(.controlCharacter)
                return n
            }
            i = control + 1
        }
        return i
    }

    private mutating func appendToLine(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        lineLength += range.count
        line.append(bytes, range)
        if !sawRequestLine {
            for k in max(range.lowerBound, range.upperBound - 8)..<range.upperBound {
                lineTail = lineTail << 8 | UInt64(bytes[k])
            }
        }
    }

    private mutating func resetLine() {
        line.removeAll()
        lineLength = 0
        lineTail = 0
    }

    /// A line ended with CRLF.
    private mutating func endLine() {
        defer { resetLine() }
        if stage == .trailer {
            if lineLength == 0 {
                finishRequest()
            } else {
                inspectFieldLine(inTrailer: true)
            }
        } else if !sawRequestLine {
            // Empty lines before a request line are skipped.
            guard lineLength > 0 else { return }
            sawRequestLine = true
            method = methodKind()
            // "HTTP/1.1" as the request line's last eight bytes.
            isHTTP11 = lineLength >= 8 && lineTail == 0x4854_5450_2F31_2E31
        } else if lineLength == 0 {
            endHead()
        } else {
            inspectFieldLine(inTrailer: false)
        }
    }

    /// The method of the request line in `line`, as evhttp 2.1.12 reads it (case sensitive).
    private func methodKind() -> MethodKind {
        var length = 0
        while length < line.count, line[length] != Byte.space { length += 1 }
        guard length < line.count else { return .ignoresBody }  // no space in the bytes kept
        switch length {
        case 3: return line.hasPrefix("GET") || line.hasPrefix("PUT") ? .readsBody : .ignoresBody
        case 4: return line.hasPrefix("POST") ? .readsBody : .ignoresBody
        case 5: return line.hasPrefix("PATCH") ? .readsBody : .ignoresBody
        case 6: return line.hasPrefix("DELETE") ? .readsBody : .ignoresBody
        case 7:
            if line.hasPrefix("OPTIONS") { return .readsBody }
            return line.hasPrefix("CONNECT") ? .connect : .ignoresBody
        default: return .ignoresBody
        }
    }

    /// A header or trailer line, in `line` (its first bytes when longer).
    private mutating func inspectFieldLine(inTrailer: Bool) {
        let kept = line.count
        let isWhole = lineLength == kept
        if line[0] == Byte.space || line[0] == Byte.htab {
            stage = .violated(.obsoleteLineFolding)
            return
        }
        var colon = 0
        while colon < kept, line[colon] != Byte.colon { colon += 1 }
        guard colon < kept else {
            // A longer line has a longer name than the two looked for (evhttp's own checks and
            // the loop's name check apply to it).
            if isWhole { stage = .violated(.malformedFieldLine) }
            return
        }
        guard colon > 0 else {
            stage = .violated(.malformedFieldLine)
            return
        }
        if line[colon - 1] == Byte.space || line[colon - 1] == Byte.htab {
            stage = .violated(.whitespaceBeforeColon)
            return
        }
        let isLength = colon == 14 && line.hasLowercasedPrefix("content-length")
        let isEncoding = colon == 17 && line.hasLowercasedPrefix("transfer-encoding")
        guard isLength || isEncoding else { return }
        if inTrailer {
            stage = .violated(.framingFieldInTrailer)
        } else if !isWhole {
            stage = .violated(.framingFieldTooLong)
        } else if isLength {
            readContentLength(from: colon + 1)
        } else {
            readTransferEncoding(from: colon + 1)
        }
    }

    private mutating func readContentLength(from start: Int) {
        var lower = start
        var upper = line.count
        while lower < upper, line[lower] == Byte.space || line[lower] == Byte.htab { lower += 1 }
        while upper > lower, line[upper - 1] == Byte.space || line[upper - 1] == Byte.htab { upper -= 1 }
        let digits = upper - lower
        guard (1...18).contains(digits) else {
            stage = .violated(.invalidContentLength)
            return
        }
        var value: UInt64 = 0
        for k in lower..<upper {
            let byte = line[k]
            guard byte >= Byte.zero, byte <= Byte.nine else {
                stage = .violated(.invalidContentLength)
                return
            }
            value = value * 10 + UInt64(byte - Byte.zero)
        }
        if let contentLength, contentLength != value || contentLengthDigits != digits {
            stage = .violated(.conflictingContentLength)
        } else if chunked {
            stage = .violated(.transferEncodingWithContentLength)
        } else {
            contentLength = value
            contentLengthDigits = digits
        }
    }

    private mutating func readTransferEncoding(from start: Int) {
        guard !chunked else {
            stage = .violated(.repeatedTransferEncoding)
            return
        }
        // Trimmed as evhttp trims (leading SP, trailing SP and HTAB): a leading HTAB stays and
        // makes the value something else than `chunked`, as it is to evhttp.
        var lower = start
        var upper = line.count
        while lower < upper, line[lower] == Byte.space { lower += 1 }
        while upper > lower, line[upper - 1] == Byte.space || line[upper - 1] == Byte.htab { upper -= 1 }
        if upper - lower != 7 || !line.hasLowercasedPrefix("chunked", at: lower) {
            stage = .violated(.unsupportedTransferEncoding)
        } else if contentLength != nil {
            stage = .violated(.transferEncodingWithContentLength)
        } else if !isHTTP11 {
            stage = .violated(.transferEncodingBeforeHTTP11)
        } else {
            chunked = true
        }
    }

    /// The empty line after the headers.
    private mutating func endHead() {
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

    private mutating func finishRequest() {
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

    // MARK: Chunk size lines

    private mutating func startChunkLine() {
        stage = .chunkSize
        chunkDigits = 0
        chunkSize = 0
        chunkLineLength = 0
        pendingCR = false
    }

    /// Consumes a chunk size line (short: byte by byte) up to its LF at most.
    private mutating func consumeChunkLine(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if pendingCR {
                guard byte == Byte.lf else {
                    stage = .violated(.bareCarriageReturn)
                    return bytes.count
                }
                pendingCR = false
                if chunkSize == 0 {
                    stage = .trailer
                    resetLine()
                } else {
                    stage = .chunkData(chunkSize)
                }
                return i
            }
            if byte == Byte.cr {
                guard chunkDigits > 0 else {
                    stage = .violated(.invalidChunkSize)
                    return bytes.count
                }
                pendingCR = true
                continue
            }
            if byte == Byte.lf {
                stage = .violated(.bareLineFeed)
                return bytes.count
            }
            chunkLineLength += 1
            guard chunkLineLength <= Self.chunkLineLimit else {
                stage = .violated(.chunkLineTooLong)
                return bytes.count
            }
            guard stage == .chunkSize else { continue }  // an extension: any other byte
            if let digit = Self.hexValue(byte), chunkDigits < 16 {
                chunkDigits += 1
                chunkSize = chunkSize << 4 | UInt64(digit)
            } else if byte == Byte.semicolon && chunkDigits > 0 {
                stage = .chunkExtension
            } else {
                stage = .violated(.invalidChunkSize)
                return bytes.count
            }
        }
        return i
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case Byte.zero ... Byte.nine: byte - Byte.zero
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: Scanning

    /// The index of the first byte below 0x20 (CR, LF, HTAB, NUL...) from `start`, or the count.
    /// Eight bytes at a time: `(w - 0x20…) & ~w & 0x80…` marks the bytes below 0x20; a borrow can
    /// mark a byte above a marked one, never below, so the lowest mark is exact.
    static func firstControlByte(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        while n - i >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let marks = (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
            if marks != 0 { return i + marks.trailingZeroBitCount / 8 }
            i += 8
        }
        while i < n, bytes[i] >= 0x20 { i += 1 }
        return i
    }

    // MARK: Line buffer

    /// The first ``capacity`` bytes of a line, inline.
    struct LineBuffer: Sendable, Equatable {
        static let capacity = 64
        private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        private(set) var count = 0

        /// Appends what fits of `bytes[range]`.
        mutating func append(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
            let taken = min(Self.capacity - count, range.count)
            guard taken > 0, let source = bytes.baseAddress else { return }
            let offset = count
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.baseAddress!.advanced(by: offset).copyMemory(from: source + range.lowerBound, byteCount: taken)
            }
            count += taken
        }

        mutating func removeAll() { count = 0 }

        subscript(index: Int) -> UInt8 {
            precondition(index < count)
            return withUnsafeBytes(of: storage) { $0[index] }
        }

        /// Whether the bytes kept start with `prefix` exactly.
        func hasPrefix(_ prefix: StaticString) -> Bool {
            let length = prefix.utf8CodeUnitCount
            guard length <= count else { return false }
            for k in 0..<length where self[k] != prefix.utf8Start[k] { return false }
            return true
        }

        /// Whether the bytes at `offset` are `lowercase` (ASCII letters and `-`) in any case. Setting
        /// bit 5 maps a letter to its lower case and `-` to itself; only CR, never kept, maps to `-`
        /// too.
        func hasLowercasedPrefix(_ lowercase: StaticString, at offset: Int = 0) -> Bool {
            let length = lowercase.utf8CodeUnitCount
            guard offset + length <= count else { return false }
            for k in 0..<length where self[offset + k] | 0x20 != lowercase.utf8Start[k] { return false }
            return true
        }

        static func == (a: LineBuffer, b: LineBuffer) -> Bool {
            guard a.count == b.count else { return false }
            for k in 0..<a.count where a[k] != b[k] { return false }
            return true
        }
    }

    /// The bytes the scan looks for.
    private enum Byte {
        static let cr = UInt8(ascii: "\r")
        static let lf = UInt8(ascii: "\n")
        static let htab = UInt8(ascii: "\t")
        static let space = UInt8(ascii: " ")
        static let colon = UInt8(ascii: ":")
        static let semicolon = UInt8(ascii: ";")
        static let zero = UInt8(ascii: "0")
        static let nine = UInt8(ascii: "9")
    }
}
