/// The life of one server connection as a pure state machine (issue 46): what the connection
/// does next is decided here, from events, and carried out by the transport (tests drive it
/// without sockets).
///
/// ```
///            ┌──────────────── answer written, keep-alive ─────────────────┐
///            ▼                                                             │
/// idle ──bytes──▶ head ──head──▶ body ──end──▶ dispatched ──answer──▶ writing ──written, close──▶ closed
///                                  │   (no body: straight to dispatched)   │
///                                  └── answer (a refusal on the head) ─────┤
///                                      written at once, then closed        └─ CONNECT granted ──▶ tunnel
/// ```
/// - One request at a time, in order: reading pauses from a request's end until its answer is
///   written, so pipelined requests wait in the socket, not in memory (a client that never reads
///   is held back by TCP; the review-defects issue's flood cannot come back).
/// - A streamed body (an endpoint that declares it) is dispatched with its head and read while
///   the handler asks for it; its answer may come before its end (then the connection closes,
///   the rest unread) or after.
/// - Keep-alive as RFC 9112 9.3 says: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
///   `Connection: keep-alive`. A drain, a violation or a deadline closes after what is in flight.
/// - `Expect: 100-continue` on a request with a body: `100 Continue` is written before the body
///   is read. An answer that comes while a body is still being read (a refusal made on the head)
///   is written at once and the connection closes: the rest of that body is never read.
/// - A deadline answers 408 when a request was begun and nothing was answered yet; an idle
///   connection just closes, and so does one whose answer is late or not being read (a client
///   that never reads may not hold the connection). The server arms no deadline while a handler
///   works: its own timeouts (upstream, vault) bound its answer.
/// - A granted CONNECT hands the connection to its tunnel once the answer is written; a refused
///   one keeps it as the client asked (a retry with credentials after a 407).
struct ServerConnectionState: Equatable {
    enum Phase: Equatable {
        /// Between requests, reading.
        case idle
        /// A head begun, not complete.
        case head
        /// Reading the body of the current request.
        case body
        /// The request is complete; its answer is being made. Reading paused.
        case dispatched
        /// Its answer is being written. Reading paused.
        case writing
        /// Bytes now go to a tunnel (a granted CONNECT).
        case tunnel
        case closed
    }

    enum Event: Equatable {
        /// Bytes of a next request arrived (the first of a head).
        case headBegun
        /// A head was parsed: its keep-alive wish, whether a body follows, whether it asks for
        /// `100 Continue` (HTTP/1.1 only: the caller ignores it in HTTP/1.0), and whether it is a
        /// CONNECT.
        /// `streamsBody`: the body goes to the handler as it arrives (dispatched on the head).
        case head(
            keepAlive: Bool, hasBody: Bool, expectsContinue: Bool, isConnect: Bool = false, streamsBody: Bool = false)
        /// The request's last byte (its head's, without a body).
        case messageEnded
        /// The answer is ready to write; `close` when it ends the connection (its own
        /// `Connection: close`, or an error after which the stream cannot be trusted).
        case answer(close: Bool)
        /// The answer's last byte left.
        case written
        /// Writing failed (the peer reset or closed).
        case writeFailed
        /// A CONNECT's answer was written and the tunnel takes the connection.
        case tunnelGranted
        /// The peer closed its side.
        case peerClosed
        /// The parser refused the stream (answered with its status, then closed).
        case violation(status: Int)
        /// The header, body or idle deadline passed.
        case deadline
        /// The server drains: finish what is in flight, take nothing new.
        case drain
    }

    enum Action: Equatable {
        case none
        /// Go on reading (a body, or the next request once an answer was written).
        case read
        /// Hand the request to its handler (head and, unless streamed, its whole body); reading
        /// stays paused until ``read``.
        case dispatch
        /// Hand the head to its handler, with its body to come as a stream; the body is read as
        /// the handler asks for it (`100 Continue` first when asked for and none of it came).
        case dispatchStreaming(writeContinue: Bool)
        /// Write `100 Continue` and go on reading the body.
        case writeContinue
        /// Write the answer.
        case write
        /// Write an error answer of this status, then close.
        case writeErrorAndClose(status: Int)
        /// Close the connection (after what is written has left).
        case close
        /// Hand the connection to the tunnel.
        case startTunnel
    }

    private(set) var phase: Phase = .idle
    /// The current request keeps the connection (its wish, unless a drain or an error said no).
    private var keepAlive = true
    private var draining = false
    private var isConnect = false
    /// The current request's body goes to its handler as it arrives.
    private var streaming = false

    /// Whether the answer being written keeps the connection (what its `Connection` says).
    var answerKeepsConnection: Bool { keepAlive && !draining }

    mutating func event(_ event: Event) -> Action {
        switch (phase, event) {
        case (.closed, _), (.tunnel, _):
            return .none

        case (.idle, .violation(let status)), (.head, .violation(let status)), (.body, .violation(let status)):
            phase = .closed
            return .writeErrorAndClose(status: status)

        case (.idle, .headBegun):
            phase = .head
            return .none
        case (.idle, .head(let keepAlive, let hasBody, let expectsContinue, let isConnect, let streamsBody)),
            (.head, .head(let keepAlive, let hasBody, let expectsContinue, let isConnect, let streamsBody)):
            self.isConnect = isConnect
            streaming = streamsBody && hasBody
            return startRequest(keepAlive: keepAlive, hasBody: hasBody, expectsContinue: expectsContinue)
        case (.body, .messageEnded):
            phase = .dispatched
            // A streamed body's handler has the request already: its answer is awaited.
            return streaming ? .none : .dispatch
        case (.body, .answer):
            // Answered before its body was read (a refusal made on the head): written now, and
            // the connection closes, the rest of the body unread.
            keepAlive = false
            phase = .writing
            return .write
        case (.dispatched, .answer(let close)):
            keepAlive = keepAlive && !close
            phase = .writing
            return .write
        case (.writing, .written):
            if keepAlive && !draining {
                phase = .idle
                return .read
            }
            phase = .closed
            return .close
        case (.writing, .tunnelGranted) where isConnect:
            phase = .tunnel
            return .startTunnel
        case (.writing, .writeFailed):
            phase = .closed
            return .close

        case (.idle, .peerClosed), (.head, .peerClosed), (.body, .peerClosed):
            phase = .closed
            return .close
        case (.dispatched, .peerClosed), (.writing, .peerClosed):
            // The answer has nowhere to go; the handler's work finishes unseen.
            keepAlive = false
            return .none

        case (.idle, .deadline):
            phase = .closed
            return .close
        case (.head, .deadline), (.body, .deadline):
            phase = .closed
            return .writeErrorAndClose(status: 408)
        case (.dispatched, .deadline), (.writing, .deadline):
            // An answer that is late, or that the client does not read: the connection goes.
            phase = .closed
            return .close

        case (.idle, .drain):
            phase = .closed
            return .close
        case (_, .drain):
            draining = true
            return .none

        default:
            // An event that cannot happen in this phase (a second answer, bytes while paused):
            // ignored, as the transport never reads while paused.
            return .none
        }
    }

    private mutating func startRequest(keepAlive wish: Bool, hasBody: Bool, expectsContinue: Bool) -> Action {
        keepAlive = wish && !draining
        guard hasBody else {
            phase = .dispatched
            return .dispatch
        }
        phase = .body
        if streaming { return .dispatchStreaming(writeContinue: expectsContinue) }
        return expectsContinue ? .writeContinue : .read
    }
}
