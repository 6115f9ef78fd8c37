import Testing

@testable import CloakHTTP

/// A server connection's life, without sockets (issue 46): keep-alive, pipelining one request at
/// a time, 100-continue, early answers, deadlines, violations, drains and tunnels.
struct ServerConnectionStateTests {
    typealias E = ServerConnectionState.Event
    typealias A = ServerConnectionState.Action

    static let get = E.head(keepAlive: true, hasBody: false, expectsContinue: false)
    static let post = E.head(keepAlive: true, hasBody: true, expectsContinue: false)
    static let connect = E.head(keepAlive: true, hasBody: false, expectsContinue: false, isConnect: true)
    static let upload = E.head(keepAlive: true, hasBody: true, expectsContinue: false, streamsBody: true)

    @Test(
        arguments: [
            // A GET, answered, kept: reading resumes only once the answer left.
            (
                "keep-alive GET", [E.headBegun, get, .answer(close: false), .written],
                [A.none, .dispatch, .write, .read]
            ),
            // Two in a row on one connection.
            (
                "two requests", [get, .answer(close: false), .written, get, .answer(close: false), .written],
                [A.dispatch, .write, .read, .dispatch, .write, .read]
            ),
            // A body is read before dispatch.
            (
                "POST with a body", [post, .messageEnded, .answer(close: false), .written],
                [A.read, .dispatch, .write, .read]
            ),
            // The client's Connection: close, or HTTP/1.0 without keep-alive.
            (
                "close asked",
                [E.head(keepAlive: false, hasBody: false, expectsContinue: false), .answer(close: false), .written],
                [A.dispatch, .write, .close]
            ),
            // The answer closes (an error after which the stream cannot be trusted).
            ("answer closes", [get, .answer(close: true), .written], [A.dispatch, .write, .close]),
            // 100-continue: written before the body is read.
            (
                "100-continue",
                [
                    E.head(keepAlive: true, hasBody: true, expectsContinue: true), .messageEnded, .answer(close: false),
                    .written,
                ],
                [A.writeContinue, .dispatch, .write, .read]
            ),
            // 100-continue on a request without a body: nothing to continue.
            ("100-continue, no body", [E.head(keepAlive: true, hasBody: false, expectsContinue: true)], [A.dispatch]),
            // Refused on its head while its body arrives: written now, the rest unread, closed.
            ("early answer", [post, .answer(close: false), .written, .messageEnded], [A.read, .write, .close, .none]),
            // Deadlines: an idle connection closes; a begun request gets 408.
            ("idle deadline", [E.deadline], [A.close]),
            ("header deadline", [E.headBegun, .deadline], [A.none, .writeErrorAndClose(status: 408)]),
            ("body deadline", [post, .deadline], [A.read, .writeErrorAndClose(status: 408)]),
            // A late answer, or one the client does not read: closed at the deadline.
            (
                "deadline while dispatched", [get, .deadline, .answer(close: false), .written],
                [A.dispatch, .close, .none, .none]
            ),
            (
                "deadline while writing", [get, .answer(close: false), .deadline, .written],
                [A.dispatch, .write, .close, .none]
            ),
            (
                "write failed", [get, .answer(close: false), .writeFailed, .written],
                [A.dispatch, .write, .close, .none]
            ),
            // A violation answers its status and closes, whatever was read.
            ("violation", [E.headBegun, .violation(status: 431)], [A.none, .writeErrorAndClose(status: 431)]),
            ("violation in a body", [post, .violation(status: 400)], [A.read, .writeErrorAndClose(status: 400)]),
            // Drain: an idle connection closes now; a busy one after its answer.
            ("drain when idle", [E.drain], [A.close]),
            ("drain when busy", [get, .drain, .answer(close: false), .written], [A.dispatch, .none, .write, .close]),
            (
                "drain before a head", [E.headBegun, .drain, get, .answer(close: false), .written],
                [A.none, .none, .dispatch, .write, .close]
            ),
            // The peer leaves: mid-request, closed at once; while answering, closed after.
            ("peer closes mid-head", [E.headBegun, .peerClosed], [A.none, .close]),
            (
                "peer closes while dispatched", [get, .peerClosed, .answer(close: false), .written],
                [A.dispatch, .none, .write, .close]
            ),
            // CONNECT: its answer written, the tunnel takes over; nothing else happens here after.
            (
                "tunnel", [connect, .answer(close: false), .tunnelGranted, .written, .deadline],
                [A.dispatch, .write, .startTunnel, .none, .none]
            ),
            // A refused CONNECT keeps the connection as the client asked: it may try again (with
            // credentials after a 407). A client that sent tunnel bytes before the answer has
            // them read as a request, and refused.
            ("refused CONNECT", [connect, .answer(close: false), .written], [A.dispatch, .write, .read]),
            // Only a CONNECT becomes a tunnel.
            (
                "no tunnel for a GET", [get, .answer(close: false), .tunnelGranted, .written],
                [A.dispatch, .write, .none, .read]
            ),
            // A streamed body: dispatched on its head, answered after its end, kept.
            (
                "streamed body", [upload, .messageEnded, .answer(close: false), .written],
                [A.dispatchStreaming(writeContinue: false), .none, .write, .read]
            ),
            (
                "streamed body, 100-continue",
                [E.head(keepAlive: true, hasBody: true, expectsContinue: true, streamsBody: true)],
                [A.dispatchStreaming(writeContinue: true)]
            ),
            // Answered before its end: written now, then closed, the rest of the body unread.
            (
                "streamed body answered early", [upload, .answer(close: false), .written, .messageEnded],
                [A.dispatchStreaming(writeContinue: false), .write, .close, .none]
            ),
            // Streaming asked for a request without a body: an ordinary dispatch.
            (
                "streaming without a body",
                [E.head(keepAlive: true, hasBody: false, expectsContinue: false, streamsBody: true)], [A.dispatch]
            ),
            // The client stalls mid-body: 408.
            (
                "streamed body deadline", [upload, .deadline],
                [A.dispatchStreaming(writeContinue: false), .writeErrorAndClose(status: 408)]
            ),
            // After close, nothing.
            (
                "closed is final", [get, .answer(close: true), .written, get, .drain],
                [A.dispatch, .write, .close, .none, .none]
            ),
            // Events that cannot happen in a phase are ignored (a second answer, an end without body).
            (
                "ignored", [get, .messageEnded, .answer(close: false), .answer(close: true), .written],
                [A.dispatch, .none, .write, .none, .read]
            ),
        ] as [(String, [E], [A])])
    func eachEventDecides(name: String, events: [E], actions: [A]) {
        var state = ServerConnectionState()
        #expect(events.map { state.event($0) } == actions, "\(name)")
    }

    /// Whatever happens, reading never resumes while an answer is owed or being written: every
    /// sequence of up to four events from every phase, checked.
    @Test func readingNeverResumesWhileAnAnswerIsPending() {
        let all: [E] = [
            .headBegun, Self.get, Self.post, Self.connect, Self.upload, .messageEnded, .answer(close: false),
            .answer(close: true),
            .written, .writeFailed, .tunnelGranted, .peerClosed, .violation(status: 400), .deadline, .drain,
        ]
        func walk(_ state: ServerConnectionState, depth: Int) {
            guard depth > 0 else { return }
            for event in all {
                var next = state
                let action = next.event(event)
                if action == .read {
                    #expect(
                        next.phase == .idle || next.phase == .body,
                        "read in \(next.phase) after \(event) from \(state.phase)")
                }
                if state.phase == .closed { #expect(action == .none) }
                walk(next, depth: depth - 1)
            }
        }
        walk(ServerConnectionState(), depth: 4)
    }

    @Test(arguments: [
        (true, [String](), true), (true, ["close"], false), (true, ["Keep-Alive, CLOSE"], false),
        (false, [], false), (false, ["keep-alive"], true), (false, [" Keep-Alive ", "te"], true),
        (true, ["upgrade", "te"], true), (false, ["keep-alive", "close"], false),
        (true, ["close,"], false), (true, [",,close"], false), (true, ["closed"], true),
        (true, ["keep-alive", "Close"], false),
    ])
    func keepAliveFollowsRFC9112(isHTTP11: Bool, connection: [String], keep: Bool) {
        let headers = connection.map { (name: "Connection", value: $0) }
        #expect(!HTTPSyntax.asksToClose(headers, isHTTP10: !isHTTP11) == keep)
    }
}
