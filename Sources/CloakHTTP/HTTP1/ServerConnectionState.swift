/// The life of one server connection as a pure state machine (issues 46 and 58): what the
/// connection does next, including how its request body and its answer flow and every
/// deadline, is decided here from events, and carried out by ``ServerConnection`` (tests drive
/// it without sockets, on a clock of their own).
///
/// ```
///            ┌──────────────── answer written, keep-alive ─────────────────┐
///            ▼                                                             │
/// idle ──bytes──▶ head ──head──▶ body ──end──▶ dispatched ──answer──▶ writing ──written, close──▶ closed
///                                  │   (no body: straight to dispatched)   │
///                                  └── refused (on its head, past its      ├─ CONNECT granted ──▶ tunnel
///                                      limit, a violation) ──▶ refusing ───┘
/// ```
/// - One request at a time, in order: reading pauses from a request's end until its answer is
///   written, so pipelined requests wait in the socket, not in memory.
/// - The body (``BodyFlow``) is read whole within the server's limit, or streamed to a handler
///   dispatched on the head (``IncomingBody``: read ahead within its watermarks, past which the
///   client is held back by TCP), or refused: an answer given before the body's end closes the
///   connection once written, the rest unread.
/// - The answer (``AnswerFlow``) is written whole, or streamed from its producer
///   (``OutgoingBody``) as the socket takes it.
/// - Keep-alive as RFC 9112 9.3 says: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
///   `Connection: keep-alive`. A drain, a refusal or a deadline closes after what is in flight.
/// - `Expect: 100-continue` on a request with a body: `100 Continue` before the body is read.
/// - Deadlines (``deadline``): the head's and the body's from when they began, cut sooner when
///   the client sends nothing for the idle timeout; a streamed body's grows with its bytes (at
///   least ``Limits/minimumBodyRate`` a second after the body timeout); none while a handler
///   works (its own timeouts bound it); the idle timeout while an answer is written. At a
///   deadline a begun request is answered 408, anything else closes.
/// - A granted CONNECT hands the connection to its tunnel once the answer is written.
///
/// An event that cannot happen in a phase (the connection never makes it) traps in debug
/// builds; events that race with the client or the handler (a late answer, a close) are taken.
struct ServerConnectionState<Clock: MonotonicClock> {
    enum Phase: Equatable {
        /// Between requests, reading.
        case idle
        /// A head begun, not complete.
        case head
        /// Reading the body of the current request.
        case body
        /// The request is complete; its answer is being made. Reading paused.
        case dispatched
        /// The request was refused (on its head, past its limit, or the stream broke a rule):
        /// its answer gets the refusal's status and the connection closes after it.
        case refusing(status: Int)
        /// Its answer is being written. Reading paused.
        case writing
        /// Bytes now go to a tunnel (a granted CONNECT).
        case tunnel
        /// Done: what was written leaves and the connection lingers, or it is gone.
        case closed
    }

    /// How the current request's body is read.
    enum BodyFlow: Equatable {
        case none
        /// Read whole before dispatch: `read` bytes so far, at most `limit`.
        case buffering(limit: Int, read: Int)
        /// Handed to its handler as it comes; `since`: when the handler was dispatched.
        case streaming(IncomingBody, since: UInt64)
    }

    /// How the current answer is written.
    enum AnswerFlow: Equatable {
        case none
        /// Given to the transport whole: written once the transport has sent it.
        case whole
        /// Pulled from its producer as the socket takes it.
        case streaming(OutgoingBody)
    }

    struct Limits: Equatable {
        var maxBodyBytes: Int
        var headerTimeout: UInt64
        var bodyTimeout: UInt64
        var idleTimeout: UInt64
        /// How long a closing connection reads (and drops) what the client still sends.
        var linger: UInt64 = 2_000_000_000
        /// Bytes a second a streamed body must average past the body timeout.
        var minimumBodyRate: UInt64 = 16 << 10
    }

    /// What a parsed head says, as the connection saw it.
    struct Head: Equatable {
        var keepAlive = true
        var expectsContinue = false
        var isConnect = false
        /// A HEAD request: its answer has no body.
        var isHeadMethod = false
        var isHTTP10 = false
        /// A method the server routes (``HTTPMethod``); others are answered 501.
        var isKnownMethod = true
        var body: RequestHead.BodyFraming = .none
        /// How the endpoint reads it (asked of the router once, on the head).
        var delivery: RequestBodyDelivery = .whole
    }

    /// An answer the handler gave.
    struct Answer: Equatable {
        /// Its own `Connection: close`, or an error after which the stream cannot be trusted.
        var close = false
        /// A streamed body's promised length (nil: a whole body).
        var streamedLength: Int?
        /// A granted CONNECT: the tunnel starts once it is written.
        var grantsTunnel = false
    }

    /// How an answer is written.
    struct Write: Equatable {
        /// The status to write in place of the handler's (a refusal's).
        var status: Int?
        var persistence: MessageWriter.Persistence
        var headOnly: Bool
        /// The body is streamed after the head.
        var streams: Bool
    }

    enum Event: Equatable {
        /// Bytes arrived; `startsHead`: none were waiting unparsed (a next request's first).
        case received(startsHead: Bool)
        case head(Head)
        /// Bytes of a whole body were parsed.
        case bodyRead(count: Int)
        /// Bytes of a streamed body were parsed.
        case bodyPiece([UInt8])
        /// The request's last byte.
        case messageEnded
        /// The handler asks for the next piece of its streamed body.
        case ask
        /// The handler's answer to the current request.
        case answer(Answer)
        /// The transport holds `unsent` bytes not in the socket yet.
        case sent(unsent: Int)
        /// The producer's answer to ``Action/pullAnswer``.
        case answerPiece(BodyStream.Piece, unsent: Int)
        /// The parser refused the stream.
        case violation(HTTPViolation)
        /// The peer closed its side (or the connection failed).
        case peerClosed
        /// ``deadline`` passed.
        case deadline
        /// The server drains: finish what is in flight, take nothing new.
        case drain
    }

    enum Action: Equatable {
        case none
        /// Go on parsing what was read, and reading (a next request once an answer left).
        case read
        /// Keep the parsed bytes as the whole body.
        case appendBody
        /// Hand the request to its handler, with its whole body; with a violation, refused
        /// before any route sees it (its body is not read).
        case dispatch(violation: HTTPViolation?)
        /// Hand the head to its handler, its body to come as a stream (`100 Continue` first).
        case dispatchStreaming(writeContinue: Bool)
        /// The stream broke a rule with no request of its own to answer it: answered through
        /// the handler as a request carrying the violation, then closed.
        case dispatchRefusal(HTTPViolation)
        /// Write `100 Continue` and go on reading the body.
        case writeContinue
        /// Give this piece to the handler waiting for its body.
        case deliver(BodyStream.Piece)
        /// Write the answer's head (and whole body).
        case write(Write)
        /// Ask the answer's producer for its next piece.
        case pullAnswer
        /// Give the answer's next piece to the transport.
        case send([UInt8])
        /// Write an error answer of this status (made by the server), then close gracefully.
        case writeErrorAndClose(status: Int)
        /// Hand the connection to the tunnel.
        case startTunnel
        /// Close the socket now.
        case close
        /// Let what was written leave, end the sending side, and linger until ``deadline``.
        case closeGracefully
    }

    // Changed only by the transitions (this file and its `+Request` and `+Answer` extensions);
    // the connection reads them.
    let limits: Limits
    let clock: Clock
    var phase: Phase = .idle
    var body: BodyFlow = .none
    var answer: AnswerFlow = .none
    /// When the connection times out (nanoseconds of ``clock``; `.max`: none armed).
    var deadline: UInt64
    /// The current head's or body's own deadline, within which ``deadline`` may come sooner.
    var readingDeadline: UInt64
    var keepAlive = true
    var draining = false
    /// What the current request's head said.
    var request = Head()
    /// The answer being written grants a CONNECT: the tunnel starts once it has left.
    var grantsTunnel = false

    init(limits: Limits, clock: Clock) {
        self.limits = limits
        self.clock = clock
        readingDeadline = 0
        deadline = 0
        startReading(timeout: limits.headerTimeout)
    }

    /// Whether the socket is read now.
    var readsInput: Bool {
        switch phase {
        case .idle, .head: return true
        case .body:
            switch body {
            case .buffering: return true
            case .streaming(let incoming, _): return incoming.wantsInput
            case .none: return false
            }
        default: return false
        }
    }

    /// Whether the current body goes to its handler as it comes.
    var streamsBody: Bool {
        if case .streaming = body { return true }
        return false
    }

    mutating func event(_ event: Event) -> Action {
        switch event {
        case .received(let startsHead): return received(startsHead: startsHead)
        case .head(let head): return begin(head)
        case .bodyRead(let count): return bodyRead(count)
        case .bodyPiece(let bytes): return bodyPiece(bytes)
        case .messageEnded: return messageEnded()
        case .ask: return ask()
        case .answer(let answer): return answered(answer)
        case .sent(let unsent): return sent(unsent: unsent)
        case .answerPiece(let piece, let unsent): return answerPiece(piece, unsent: unsent)
        case .violation(let violation): return refused(violation)
        case .peerClosed: return peerClosed()
        case .deadline: return deadlinePassed()
        case .drain: return drain()
        }
    }

    /// A fresh machine for the requests inside a granted tunnel.
    func restarted() -> Self { Self(limits: limits, clock: clock) }

    // MARK: Deadlines

    /// A head (or a body) must be complete `timeout` from now, and bytes must keep coming.
    mutating func startReading(timeout: UInt64) {
        let now = clock.now()
        readingDeadline = now &+ timeout
        deadline = min(readingDeadline, now &+ limits.idleTimeout)
    }

    /// The client owes bytes: the reading deadline, cut by the idle timeout from now.
    mutating func clientsTurn() {
        deadline = min(readingDeadline, clock.now() &+ limits.idleTimeout)
    }

    /// A streamed body must arrive at ``Limits/minimumBodyRate`` on average past the body
    /// timeout: a client trickling a large upload is cut at its pace, not at what its limit allows.
    func streamDeadline(since: UInt64, received: Int) -> UInt64 {
        since &+ limits.bodyTimeout &+ UInt64(received) &* 1_000_000_000 / limits.minimumBodyRate
    }

    mutating func closeGracefully() -> Action {
        phase = .closed
        deadline = clock.now() &+ limits.linger
        return .closeGracefully
    }

    /// An event the connection never makes in this phase: a bug in the connection.
    func impossible(_ event: StaticString) -> Action {
        assertionFailure("ServerConnectionState: \(event) in \(phase)")
        return .none
    }
}
