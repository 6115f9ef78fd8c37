import Testing

@testable import CloakHTTP

/// How streamed bodies and answers flow, as tables over the pure machines (issue 58): the
/// cases `StreamedBodyTests` and `StreamedAnswerTests` check through sockets, without one.
struct StreamFlowTests {
    typealias E = Machine.Event
    typealias A = Machine.Action

    static let upload = E.head(.init(body: .length(100_000), delivery: .streamed(maxBytes: 1_000_000)))
    static let chunkedUpload = E.head(.init(body: .chunked, delivery: .streamed(maxBytes: 1_000)))
    static let kb16 = [UInt8](repeating: 1, count: 16 << 10)
    static let streamedAnswer = E.answer(.init(streamedLength: 6))
    static let writeStreamed = A.write(.init(status: nil, persistence: .keepAlive11, headOnly: false, streams: true))

    @Test(
        arguments: [
            // Dispatched on its head; the handler's ask is answered as bytes come.
            (
                "dispatched on the head", [upload, .ask, .bodyPiece([1, 2])],
                [A.dispatchStreaming(writeContinue: false), .read, .deliver(.bytes([1, 2]))]
            ),
            (
                "100-continue",
                [E.head(.init(expectsContinue: true, body: .length(5), delivery: .streamed(maxBytes: 9)))],
                [A.dispatchStreaming(writeContinue: true)]
            ),
            // Read ahead of the handler (one merged run), then handed out whole.
            (
                "read ahead, merged", [upload, .bodyPiece([1]), .bodyPiece([2]), .ask, .ask],
                [A.dispatchStreaming(writeContinue: false), .none, .none, .deliver(.bytes([1, 2])), .read]
            ),
            // The end after the bytes before it, and to every later ask.
            (
                "end after bytes", [upload, .bodyPiece([1]), .messageEnded, .ask, .ask, .ask],
                [
                    A.dispatchStreaming(writeContinue: false), .none, .none, .deliver(.bytes([1])), .deliver(.end),
                    .deliver(.end),
                ]
            ),
            (
                "end to a waiting ask", [upload, .ask, .messageEnded],
                [A.dispatchStreaming(writeContinue: false), .read, .deliver(.end)]
            ),
            // One ask at a time.
            (
                "second ask", [upload, .ask, .ask],
                [A.dispatchStreaming(writeContinue: false), .read, .deliver(.failed(nil))]
            ),
            // Past its limit: the stream fails with the violation, and the answer gets 413.
            (
                "past the limit",
                [
                    chunkedUpload, .ask, .bodyPiece(Array(repeating: 0, count: 600)), .ask,
                    .bodyPiece(Array(repeating: 0, count: 600)), .answer(.init()),
                ],
                [
                    A.dispatchStreaming(writeContinue: false), .read, .deliver(.bytes(Array(repeating: 0, count: 600))),
                    .read, .deliver(.failed(.bodyTooLarge(limit: 1_000))),
                    .write(.init(status: 413, persistence: .close, headOnly: false, streams: false)),
                ]
            ),
            (
                "a length over the limit", [E.head(.init(body: .length(1_001), delivery: .streamed(maxBytes: 1_000)))],
                [A.dispatch(violation: .bodyTooLarge(limit: 1_000))]
            ),
            // A violation in a streamed body goes to its handler, whose answer gets the status.
            (
                "violation", [chunkedUpload, .violation(.malformedFraming(reason: "x")), .ask, .answer(.init())],
                [
                    A.dispatchStreaming(writeContinue: false), .none, .deliver(.failed(.malformedFraming(reason: "x"))),
                    .write(.init(status: 400, persistence: .close, headOnly: false, streams: false)),
                ]
            ),
            // Answered before its end: written, then closed, the rest unread.
            (
                "answered early", [upload, .answer(.init()), .sent(unsent: 0)],
                [
                    A.dispatchStreaming(writeContinue: false),
                    .write(.init(status: nil, persistence: .close, headOnly: false, streams: false)), .closeGracefully,
                ]
            ),
            // Answered after its end: kept.
            (
                "answered after the end", [upload, .messageEnded, .answer(.init()), .sent(unsent: 0)],
                [
                    A.dispatchStreaming(writeContinue: false), .none,
                    .write(.init(status: nil, persistence: .keepAlive11, headOnly: false, streams: false)), .read,
                ]
            ),
            // The client stalls while the handler waits: 408.
            (
                "stalled", [upload, .ask, .deadline],
                [A.dispatchStreaming(writeContinue: false), .read, .writeErrorAndClose(status: 408)]
            ),

            // A streamed answer: pulled once the head has left, piece by piece, written at its end.
            (
                "streamed answer",
                [
                    E.head(.init()), streamedAnswer, .sent(unsent: 0), .answerPiece(.bytes([1, 2, 3]), unsent: 0),
                    .sent(unsent: 0), .answerPiece(.bytes([4, 5, 6]), unsent: 0), .sent(unsent: 0),
                    .answerPiece(.end, unsent: 0),
                ],
                [
                    A.dispatch(violation: nil), writeStreamed, .pullAnswer, .send([1, 2, 3]), .pullAnswer,
                    .send([4, 5, 6]), .pullAnswer, .read,
                ]
            ),
            // Not pulled while more than the low watermark waits for the socket.
            (
                "held back by the socket",
                [E.head(.init()), streamedAnswer, .sent(unsent: 20 << 10), .sent(unsent: 16 << 10)],
                [A.dispatch(violation: nil), writeStreamed, .none, .pullAnswer]
            ),
            // Its end comes before the socket took everything: written once it has.
            (
                "end before drained",
                [
                    E.head(.init()), streamedAnswer, .sent(unsent: 0),
                    .answerPiece(.bytes([1, 2, 3, 4, 5, 6]), unsent: 0), .sent(unsent: 5),
                    .answerPiece(.end, unsent: 5), .sent(unsent: 0),
                ],
                [
                    A.dispatch(violation: nil), writeStreamed, .pullAnswer, .send([1, 2, 3, 4, 5, 6]), .pullAnswer,
                    .none, .read,
                ]
            ),
            // Broken: longer or shorter than promised, or the producer failed: closed mid-body.
            (
                "too long",
                [
                    E.head(.init()), streamedAnswer, .sent(unsent: 0),
                    .answerPiece(.bytes(Array(repeating: 0, count: 7)), unsent: 0),
                ], [A.dispatch(violation: nil), writeStreamed, .pullAnswer, .close]
            ),
            (
                "too short", [E.head(.init()), streamedAnswer, .sent(unsent: 0), .answerPiece(.end, unsent: 0)],
                [A.dispatch(violation: nil), writeStreamed, .pullAnswer, .close]
            ),
            (
                "producer failed",
                [E.head(.init()), streamedAnswer, .sent(unsent: 0), .answerPiece(.failed(nil), unsent: 0)],
                [A.dispatch(violation: nil), writeStreamed, .pullAnswer, .close]
            ),
            // HEAD: the length, never a pull.
            (
                "HEAD", [E.head(.init(isHeadMethod: true)), streamedAnswer, .sent(unsent: 0)],
                [
                    A.dispatch(violation: nil),
                    .write(.init(status: nil, persistence: .keepAlive11, headOnly: true, streams: false)), .read,
                ]
            ),
        ] as [(String, [E], [A])])
    func eachEventDecides(name: String, events: [E], actions: [A]) {
        var machine = Machine.make()
        #expect(events.map { machine.event($0) } == actions, "\(name)")
    }

    /// Reading stops at the high watermark and resumes at the low one: a handler that is behind
    /// holds the client back with at most two reads buffered.
    @Test func readingFollowsTheWatermarks() {
        var machine = Machine.make()
        _ = machine.event(Self.upload)
        #expect(machine.readsInput)
        _ = machine.event(.bodyPiece(Self.kb16))
        #expect(machine.readsInput)
        _ = machine.event(.bodyPiece(Self.kb16))
        #expect(!machine.readsInput)  // 32 KiB waiting: the socket waits
        #expect(machine.event(.ask) == .deliver(.bytes(Self.kb16 + Self.kb16)))  // all that waited
        #expect(machine.readsInput)  // nothing waits now
    }

    /// A streamed body's deadline: none while the handler works; the idle timeout while it
    /// waits, within the body timeout plus the time its bytes take at the minimum rate.
    @Test func aStreamedBodysDeadlineGrowsWithItsBytes() {
        let clock = ManualClock()
        var machine = Machine.make(clock)
        let start = clock.time
        _ = machine.event(Self.upload)
        #expect(machine.deadline == .max)
        _ = machine.event(.ask)
        #expect(machine.deadline == start + 5 * Machine.s)  // the idle timeout
        clock.advance(seconds: 4)
        #expect(
            machine.event(.bodyPiece([UInt8](repeating: 0, count: 100)))
                == .deliver(.bytes([UInt8](repeating: 0, count: 100))))
        #expect(machine.deadline == .max)
        clock.advance(seconds: 26)
        _ = machine.event(.ask)
        // 30 s of body timeout from dispatch, plus 1 s for 100 bytes at 100 bytes a second.
        #expect(machine.deadline == start + 31 * Machine.s)
    }

    /// The upstream side: a streamed request body in the exchange's machine.
    @Test(
        arguments: [
            ("whole", [ExchangeState.Event.sent(unsent: 0)], [ExchangeState.Action.none], nil as Int?),
            (
                "streamed", [.sent(unsent: 0), .bodyPiece(.bytes([1, 2])), .sent(unsent: 0), .bodyPiece(.end)],
                [.pullBody, .sendBody([1, 2]), .pullBody, .none], 2
            ),
            (
                "too short", [.sent(unsent: 0), .bodyPiece(.end)],
                [
                    .pullBody,
                    .deliverFailure(
                        .unreachable("the request's body did not have its promised length"), closeConnection: true),
                ], 2
            ),
            (
                "failed", [.sent(unsent: 0), .bodyPiece(.failed(nil))],
                [
                    .pullBody,
                    .deliverFailure(.unreachable("the request's body could not be produced"), closeConnection: true),
                ], 2
            ),
        ] as [(String, [ExchangeState.Event], [ExchangeState.Action], Int?)])
    func anUpstreamBodyFlows(name: String, events: [ExchangeState.Event], actions: [ExchangeState.Action], length: Int?)
    {
        var machine = ExchangeState(streamedLength: length)
        #expect(machine.handle(.assigned) == .send)
        #expect(events.map { machine.handle($0) } == actions, "\(name)")
    }

    /// Tiny reads (one-byte chunks, one-byte TLS records) merge into one buffered run, and an
    /// ask takes all of it: thousands of pieces can neither pile up nor be handed out one by one
    /// down a recursive chain of asks.
    @Test func tinyPiecesMergeAndOneAskTakesThemAll() {
        var machine = Machine.make()
        _ = machine.event(Self.upload)
        for byte in 0..<5_000 { _ = machine.event(.bodyPiece([UInt8(truncatingIfNeeded: byte)])) }
        #expect(machine.readsInput)  // 5,000 bytes: under the high watermark
        guard case .deliver(.bytes(let all)) = machine.event(.ask) else {
            Issue.record("the ask got no bytes")
            return
        }
        #expect(all.count == 5_000)
        #expect(machine.event(.ask) == .read)  // nothing left: the client must send
    }

    /// A refusal with no request of its own (bytes after an answered HEAD) is written as an
    /// answer to itself, not with the previous request's HEAD or HTTP/1.0 facts.
    @Test func aRefusalDoesNotInheritThePreviousHead() {
        var machine = Machine.make()
        _ = machine.event(.head(.init(isHeadMethod: true, isHTTP10: true)))
        _ = machine.event(.answer(.init()))
        _ = machine.event(.sent(unsent: 0))
        #expect(machine.event(.violation(.headTooLarge)) == .dispatchRefusal(.headTooLarge))
        #expect(
            machine.event(.answer(.init()))
                == .write(.init(status: 431, persistence: .close, headOnly: false, streams: false)))
    }

    /// A stream that promises no length is never framed (an upstream request is refused before
    /// it is sent), and no status without a body streams one.
    @Test func aStreamWithoutALengthIsNeverWritten() {
        let stream = BodyStream { $0(.end) }
        var request = UpstreamRequest(scheme: .http, host: "example.com", port: 80, target: "/", method: .POST)
        request.content = .stream(stream, length: nil)
        #expect(MessageWriter.request(request) == nil)
        request.content = .stream(stream, length: 3)
        #expect(
            MessageWriter.request(request).map { String(decoding: $0, as: UTF8.self) }?.contains("Content-Length: 3")
                == true)
        #expect(!MessageWriter.allowsBody(204) && !MessageWriter.allowsBody(304) && !MessageWriter.allowsBody(101))
        #expect(MessageWriter.allowsBody(200))
    }
}
