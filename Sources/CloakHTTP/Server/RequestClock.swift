import Glibc

/// The deadlines of one connection, as a small state machine fed with what the loop sees: bytes
/// arriving, a request handed to the handler, an answer sent. Pure: the time is passed in.
///
/// - Waiting for a request head: it must be complete `headerTimeout` after the connection was
///   accepted or its previous answer sent. Bytes arriving do not move that deadline, so a client
///   dripping one byte at a time cannot hold the connection (slowloris).
/// - Reading a body: it must be complete `bodyTimeout` after its head.
/// - Handling: no deadline here (the handler's own timeouts apply).
///
/// The end of a head is the first empty line after some content (`\r\n\r\n` or `\n\n`, as
/// evhttp accepts both). Body bytes are never scanned: the clock stops looking once the head is
/// complete, and looks again at what is buffered after the answer (a pipelined next request).
struct RequestClock: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case awaitingHead
        case readingBody
        case handling
    }

    private(set) var phase: Phase = .awaitingHead
    /// When the current phase started (nanoseconds of a monotonic clock).
    private(set) var since: UInt64
    /// Head scanning: a byte other than CR/LF was seen, and one was seen on the current line.
    private var sawContent = false
    private var lineHasContent = false

    init(now: UInt64) { since = now }

    /// Bytes that arrived while waiting for a head (what the connection peeks at in its input
    /// buffer, in place); returns true when they complete it. Runs line to line (`memchr` for
    /// each LF): a line has content when any byte before its LF is not a CR, which its first
    /// byte nearly always answers.
    @discardableResult
    mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        guard phase == .awaitingHead, let base = bytes.baseAddress else { return false }
        var start = 0
        while start < bytes.count {
            let end =
                memchr(base + start, 0x0A, bytes.count - start).map { base.distance(to: UnsafeRawPointer($0)) }
                ?? bytes.count
            // Invariant: a line with content means content was seen.
            if !lineHasContent, bytes[start..<end].contains(where: { $0 != 0x0D }) {
                lineHasContent = true
                sawContent = true
            }
            guard end < bytes.count else { return false }  // the line goes on in a later read
            if sawContent && !lineHasContent {
                phase = .readingBody
                since = now
                return true
            }
            lineHasContent = false
            start = end + 1
        }
        return false
    }

    /// The whole request was read and handed to the handler.
    mutating func dispatched(now: UInt64) {
        phase = .handling
        since = now
    }

    /// The answer was sent: the next head's clock starts now.
    mutating func answered(now: UInt64) {
        phase = .awaitingHead
        since = now
        sawContent = false
        lineHasContent = false
    }

    /// Whether the current phase has run past its deadline.
    func isExpired(now: UInt64, headerTimeout: UInt64, bodyTimeout: UInt64) -> Bool {
        switch phase {
        case .awaitingHead: return now &- since > headerTimeout
        case .readingBody: return now &- since > bodyTimeout
        case .handling: return false
        }
    }
}

/// What happens to a connection at accept, decided before any byte of it is read.
enum Admission: Sendable, Equatable {
    /// Serve it.
    case serve
    /// Over the connection limit: answer 503 (plain HTTP) and close.
    case refuseOverLimit
    /// TLS is configured but no TLS session could be made: close without a byte. Serving it
    /// in cleartext instead would fail open.
    case closeWithoutTLS

    static func decide(tlsConfigured: Bool, tlsSessionMade: Bool, slotTaken: Bool) -> Admission {
        if tlsConfigured && !tlsSessionMade { return .closeWithoutTLS }
        return slotTaken ? .serve : .refuseOverLimit
    }
}
