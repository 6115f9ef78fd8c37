import Testing

@testable import CloakHTTP

/// The upstream exchange's life, without sockets.
struct ExchangeStateTests {
    typealias E = ExchangeState.Event
    typealias A = ExchangeState.Action

    @Test(arguments: [
        // A normal exchange: sent, answered, connection kept.
        ([E.assigned, .answered(reusable: true)], [A.send, .deliverAnswer(reuseConnection: true)]),
        // An answer the peer ends with a close: the connection goes.
        ([E.assigned, .answered(reusable: false)], [A.send, .deliverAnswer(reuseConnection: false)]),
        // Refused or reset: failure delivered, connection closed.
        (
            [E.assigned, .failed(.unreachable("reset"))],
            [A.send, .deliverFailure(.unreachable("reset"), closeConnection: true)]
        ),
        // The deadline while waiting for a connection: a timeout, no connection to close.
        ([E.deadline], [A.deliverFailure(.timeout, closeConnection: false)]),
        // The deadline or connect timeout on a connection: cancel and time out.
        ([E.assigned, .deadline], [A.send, .cancelAndTimeOut]),
        ([E.assigned, .connectTimeout], [A.send, .cancelAndTimeOut]),
        // No connection could be opened.
        (
            [E.failed(.unreachable("no address"))],
            [A.deliverFailure(.unreachable("no address"), closeConnection: false)]
        ),
        // Exactly once: whatever comes after the end is ignored.
        (
            [E.assigned, .answered(reusable: true), .deadline, .failed(.timeout), .answered(reusable: true)],
            [A.send, .deliverAnswer(reuseConnection: true), .none, .none, .none]
        ),
        (
            [E.deadline, .assigned, .answered(reusable: true)],
            [A.deliverFailure(.timeout, closeConnection: false), .none, .none]
        ),
        ([E.assigned, .deadline, .answered(reusable: true)], [A.send, .cancelAndTimeOut, .none]),
        // A connection found unusable before the request was written: waiting again, then sent
        // on another; while waiting its deadline is a plain timeout (no connection to close).
        (
            [E.assigned, .returned, .assigned, .answered(reusable: true)],
            [A.send, .none, .send, .deliverAnswer(reuseConnection: true)]
        ),
        ([E.assigned, .returned, .deadline], [A.send, .none, .deliverFailure(.timeout, closeConnection: false)]),
        // Events that cannot happen in a state are ignored, not trusted.
        ([E.answered(reusable: true), .connectTimeout, .assigned, .assigned], [A.none, .none, .send, .none]),
        ([E.returned, .assigned], [A.none, .send]),
    ])
    func transitions(events: [E], actions: [A]) {
        var state = ExchangeState()
        let got = events.map { state.handle($0) }
        #expect(got == actions)
    }

    @Test func theOutcomeIsRemembered() {
        var state = ExchangeState()
        _ = state.handle(.assigned)
        _ = state.handle(.deadline)
        #expect(state.phase == .finished(.timedOut) && state.isFinished)
    }
}
