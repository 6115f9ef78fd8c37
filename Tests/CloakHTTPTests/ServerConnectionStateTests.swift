import Testing

@testable import CloakHTTP

/// A test's clock: time moves only when the test says.
final class ManualClock: MonotonicClock, @unchecked Sendable {
    var time: UInt64 = 1_000_000_000_000
    func now() -> UInt64 { time }
    func advance(seconds: Double) { time += UInt64(seconds * 1e9) }
}

typealias Machine = ServerConnectionState<ManualClock>

extension Machine {
    static let s: UInt64 = 1_000_000_000
    static let testLimits = Limits(
        maxBodyBytes: 1000, headerTimeout: 10 * s, bodyTimeout: 30 * s, idleTimeout: 5 * s, linger: 2 * s,
        minimumBodyRate: 100)
    static func make(_ clock: ManualClock = ManualClock()) -> Machine { Machine(limits: testLimits, clock: clock) }
}

/// A server connection's life, without sockets (issues 46 and 58): keep-alive, pipelining one
/// request at a time, 100-continue, refusals, deadlines, violations, drains and tunnels.
struct ServerConnectionStateTests {
    typealias E = Machine.Event
    typealias A = Machine.Action
    typealias W = Machine.Write

    static let get = E.head(.init())
    static let head = E.head(.init(isHeadMethod: true))
    static let post = E.head(.init(body: .length(10)))
    static let chunked = E.head(.init(body: .chunked))
    static let connect = E.head(.init(isConnect: true))
    static let answer = E.answer(.init())
    static let written = E.sent(unsent: 0)
    static let write = A.write(W(status: nil, persistence: .keepAlive11, headOnly: false, streams: false))
    static let writeClose = A.write(W(status: nil, persistence: .close, headOnly: false, streams: false))
    static func refusal(_ status: Int) -> A {
        .write(W(status: status, persistence: .close, headOnly: false, streams: false))
    }

    @Test(
        arguments: [
            // A GET, answered, kept: reading resumes only once the answer left.
            (
                "keep-alive GET", [E.received(startsHead: true), get, answer, written],
                [A.none, .dispatch(violation: nil), write, .read]
            ),
            (
                "two requests", [get, answer, written, get, answer, written],
                [A.dispatch(violation: nil), write, .read, .dispatch(violation: nil), write, .read]
            ),
            // Written only once the transport has sent everything.
            (
                "partly sent", [get, answer, .sent(unsent: 10), written],
                [A.dispatch(violation: nil), write, .none, .read]
            ),
            // A body is read before dispatch.
            (
                "POST with a body", [post, .bodyRead(count: 10), .messageEnded, answer, written],
                [A.read, .appendBody, .dispatch(violation: nil), write, .read]
            ),
            // The client's Connection: close, or HTTP/1.0 without keep-alive.
            (
                "close asked", [E.head(.init(keepAlive: false)), answer, written],
                [A.dispatch(violation: nil), writeClose, .closeGracefully]
            ),
            (
                "HTTP/1.0 kept", [E.head(.init(isHTTP10: true)), answer, written],
                [
                    A.dispatch(violation: nil),
                    .write(W(status: nil, persistence: .keepAlive10, headOnly: false, streams: false)), .read,
                ]
            ),
            (
                "answer closes", [get, .answer(.init(close: true)), written],
                [A.dispatch(violation: nil), writeClose, .closeGracefully]
            ),
            // HEAD: the head only, and a streamed body is never pulled.
            (
                "HEAD", [head, .answer(.init(streamedLength: 5)), written],
                [
                    A.dispatch(violation: nil),
                    .write(W(status: nil, persistence: .keepAlive11, headOnly: true, streams: false)), .read,
                ]
            ),
            // 100-continue: written before the body is read; never in HTTP/1.0; nothing to continue without a body.
            ("100-continue", [E.head(.init(expectsContinue: true, body: .length(1)))], [A.writeContinue]),
            (
                "100-continue, HTTP/1.0", [E.head(.init(expectsContinue: true, isHTTP10: true, body: .length(1)))],
                [A.read]
            ),
            ("100-continue, no body", [E.head(.init(expectsContinue: true))], [A.dispatch(violation: nil)]),
            // Refused on its head: dispatched with the violation, answered with its status, closed.
            (
                "unknown method", [E.head(.init(isKnownMethod: false)), answer, written],
                [A.dispatch(violation: .methodNotImplemented), refusal(501), .closeGracefully]
            ),
            (
                "length over the limit", [E.head(.init(body: .length(1001))), answer, written],
                [A.dispatch(violation: .bodyTooLarge(limit: 1000)), refusal(413), .closeGracefully]
            ),
            // A chunked body that grows past the limit: refused as it arrives.
            (
                "chunked past the limit", [chunked, .bodyRead(count: 600), .bodyRead(count: 600), answer],
                [A.read, .appendBody, .dispatch(violation: .bodyTooLarge(limit: 1000)), refusal(413)]
            ),
            // Deadlines: an idle connection closes; a begun request gets 408.
            ("idle deadline", [E.deadline], [A.close]),
            (
                "header deadline", [E.received(startsHead: true), .deadline],
                [A.none, .writeErrorAndClose(status: 408)]
            ),
            ("body deadline", [post, .deadline], [A.read, .writeErrorAndClose(status: 408)]),
            ("deadline while dispatched", [get, .deadline, answer], [A.dispatch(violation: nil), .close, .none]),
            (
                "deadline while writing", [get, answer, .deadline, written],
                [A.dispatch(violation: nil), write, .close, .none]
            ),
            (
                "lingering close ends", [get, .answer(.init(close: true)), written, .deadline],
                [A.dispatch(violation: nil), writeClose, .closeGracefully, .close]
            ),
            // A violation is answered through the handler, with its status, and closes.
            (
                "violation", [E.received(startsHead: true), .violation(.headTooLarge), answer, written],
                [A.none, .dispatchRefusal(.headTooLarge), refusal(431), .closeGracefully]
            ),
            (
                "violation in a body", [chunked, .violation(.malformedFraming(reason: "x")), answer],
                [A.read, .dispatchRefusal(.malformedFraming(reason: "x")), refusal(400)]
            ),
            // Drain: an idle connection closes now; a busy one after its answer.
            ("drain when idle", [E.drain], [A.close]),
            (
                "drain when busy", [get, .drain, answer, written],
                [A.dispatch(violation: nil), .none, writeClose, .closeGracefully]
            ),
            (
                "drain before a head", [E.received(startsHead: true), .drain, get, answer, written],
                [A.none, .none, .dispatch(violation: nil), writeClose, .closeGracefully]
            ),
            // The peer leaves.
            ("peer closes mid-head", [E.received(startsHead: true), .peerClosed], [A.none, .close]),
            ("peer closes while dispatched", [get, .peerClosed], [A.dispatch(violation: nil), .close]),
            // CONNECT: its answer written, the tunnel takes over; a refused one keeps the connection.
            (
                "tunnel", [connect, .answer(.init(grantsTunnel: true)), written, .deadline],
                [A.dispatch(violation: nil), write, .startTunnel, .none]
            ),
            ("refused CONNECT", [connect, answer, written], [A.dispatch(violation: nil), write, .read]),
            (
                "no tunnel for a GET", [get, .answer(.init(grantsTunnel: true)), written],
                [A.dispatch(violation: nil), write, .read]
            ),
            // After close, answers go nowhere.
            (
                "closed is final", [get, .answer(.init(close: true)), written, answer],
                [A.dispatch(violation: nil), writeClose, .closeGracefully, .none]
            ),
        ] as [(String, [E], [A])])
    func eachEventDecides(name: String, events: [E], actions: [A]) {
        var machine = Machine.make()
        #expect(events.map { machine.event($0) } == actions, "\(name)")
    }

    /// Every deadline from the injected clock: the head's, cut by the idle timeout; none while a
    /// handler works; the idle timeout while writing; the linger after a close.
    @Test func deadlinesComeFromTheClock() {
        let clock = ManualClock()
        let start = clock.time
        var machine = Machine.make(clock)
        #expect(machine.deadline == start + 5 * Machine.s)  // idle (5) before header (10)
        clock.advance(seconds: 4)
        _ = machine.event(.received(startsHead: true))
        #expect(machine.deadline == start + 9 * Machine.s)
        clock.advance(seconds: 4)
        _ = machine.event(.received(startsHead: false))
        #expect(machine.deadline == start + 10 * Machine.s)  // the header timeout, from the accept
        _ = machine.event(Self.get)
        #expect(machine.deadline == .max)  // the handler's turn
        clock.advance(seconds: 1)
        _ = machine.event(Self.answer)
        #expect(machine.deadline == clock.time + 5 * Machine.s)
        _ = machine.event(Self.written)
        #expect(machine.deadline == clock.time + 5 * Machine.s)
        _ = machine.event(.drain)
        #expect(machine.event(.deadline) == .close)
        var closing = Machine.make(clock)
        _ = closing.event(.head(.init(keepAlive: false)))
        _ = closing.event(Self.answer)
        #expect(closing.event(Self.written) == .closeGracefully)
        #expect(closing.deadline == clock.time + 2 * Machine.s)
    }

    /// Whatever happens, reading never resumes while an answer is owed or being written, and a
    /// closed connection does nothing: every sequence of up to four events the connection can
    /// make in each phase, checked.
    @Test func readingNeverResumesWhileAnAnswerIsPending() {
        let streamed = E.head(.init(body: .length(10), delivery: .streamed(maxBytes: 100)))
        func possible(_ machine: Machine) -> [E] {
            var events: [E] = [
                Self.answer, .answer(.init(close: true)), Self.written, .peerClosed, .deadline, .drain, .ask,
            ]
            if machine.readsInput {
                events += [.received(startsHead: true), .violation(.headTooLarge)]
                switch machine.phase {
                case .idle, .head: events += [Self.get, Self.post, Self.connect, streamed]
                case .body:
                    events.append(.messageEnded)
                    events.append(machine.streamsBody ? .bodyPiece([1, 2]) : .bodyRead(count: 2))
                default: break
                }
            }
            return events
        }
        func walk(_ machine: Machine, depth: Int) {
            guard depth > 0 else { return }
            for event in possible(machine) {
                var next = machine
                let action = next.event(event)
                if next.readsInput {
                    #expect(next.phase == .idle || next.phase == .head || next.phase == .body, "reads in \(next.phase)")
                }
                if machine.phase == .closed {
                    // Nothing more is read, dispatched or written (a late ask is told the body failed).
                    #expect(action == .none || action == .close || action == .deliver(.failed(nil)), "\(action)")
                }
                walk(next, depth: depth - 1)
            }
        }
        walk(Machine.make(), depth: 4)
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
