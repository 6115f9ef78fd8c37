/// The life of one upstream exchange as a pure state machine: what happens next is decided here,
/// from events, and carried out by ``Exchange`` and ``UpstreamConnection`` (tests drive it
/// without sockets).
///
/// ```
/// queued ──assigned──▶ sending ──answered──▶ finished(answered)
///   │                    ├──failed─────────▶ finished(failed)
///   └──deadline──▶ finished(timedOut) ◀──deadline / connect timeout──┘
/// ```
/// Every event after `finished` is ignored: an exchange completes exactly once.
struct ExchangeState: Equatable {
    enum Phase: Equatable {
        /// Waiting for a connection of its pool.
        case queued
        /// On a connection, its request sent or being sent, the answer not complete.
        case sending
        case finished(Outcome)
    }

    enum Outcome: Equatable {
        case answered
        case failed(UpstreamError)
        case timedOut
    }

    enum Event: Equatable {
        /// A connection took the exchange and sent its request.
        case assigned
        /// A complete answer; `reusable` when it was framed and the peer keeps the connection.
        case answered(reusable: Bool)
        case failed(UpstreamError)
        /// The exchange's deadline passed.
        case deadline
        /// A new connection did not connect in time.
        case connectTimeout
        /// The connection it was given turned out unusable before any byte of the request was
        /// written (bytes were waiting on it): it waits for another.
        case returned
    }

    /// What the owner must do after an event.
    enum Action: Equatable {
        case none
        /// Send the request on the connection.
        case send
        /// Deliver the answer; give the connection back (reusable or not).
        case deliverAnswer(reuseConnection: Bool)
        /// Deliver the failure; close the connection.
        case deliverFailure(UpstreamError, closeConnection: Bool)
        /// Deliver a timeout and close the connection (its request is abandoned mid-exchange).
        case cancelAndTimeOut
    }

    private(set) var phase: Phase = .queued

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    mutating func handle(_ event: Event) -> Action {
        switch (phase, event) {
        case (.finished, _):
            return .none
        case (.queued, .assigned):
            phase = .sending
            return .send
        case (.queued, .deadline):
            phase = .finished(.timedOut)
            return .deliverFailure(.timeout, closeConnection: false)
        case let (.queued, .failed(error)):
            // No connection could be opened, or the host did not resolve.
            phase = .finished(.failed(error))
            return .deliverFailure(error, closeConnection: false)
        case (.sending, .returned):
            phase = .queued
            return .none
        case (.queued, .answered), (.queued, .connectTimeout), (.sending, .assigned), (.queued, .returned):
            return .none  // cannot happen; ignored rather than trusted
        case let (.sending, .answered(reusable)):
            phase = .finished(.answered)
            return .deliverAnswer(reuseConnection: reusable)
        case let (.sending, .failed(error)):
            phase = .finished(.failed(error))
            return .deliverFailure(error, closeConnection: true)
        case (.sending, .deadline), (.sending, .connectTimeout):
            phase = .finished(.timedOut)
            return .cancelAndTimeOut
        }
    }
}
