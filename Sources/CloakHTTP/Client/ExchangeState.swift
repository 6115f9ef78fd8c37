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
///
/// A streamed request body (issue 58) flows in `sending` as an ``OutgoingBody``: pulled from its
/// producer as the socket takes it; a producer that fails or breaks its length fails the
/// exchange and closes the connection, so the upstream sees a cut request, never a whole one.
struct ExchangeState: Equatable {
    enum Phase: Equatable {
        /// Waiting for a connection of its pool.
        case queued
        /// On a connection, its request sent or being sent, the answer not complete; a streamed
        /// body's flow while any of it is unsent.
        case sending(OutgoingBody?)
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
        /// The transport holds `unsent` bytes of the request not in the socket yet.
        case sent(unsent: Int)
        /// The streamed body's producer answered ``Action/pullBody``.
        case bodyPiece(BodyStream.Piece)
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
        /// Ask the streamed body's producer for its next piece.
        case pullBody
        /// Give the body's next piece to the transport.
        case sendBody([UInt8])
    }

    private(set) var phase: Phase = .queued
    /// A streamed body's promised length (nil: the request goes whole).
    let streamedLength: Int?

    init(streamedLength: Int? = nil) { self.streamedLength = streamedLength }

    /// Whether part of a streamed body is still to come from its producer.
    var isSendingBody: Bool {
        if case .sending(let body?) = phase { return !body.isDone }
        return false
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    mutating func handle(_ event: Event) -> Action {
        switch (phase, event) {
        case (.finished, _):
            return .none
        case (.queued, .assigned):
            phase = .sending(streamedLength.map { OutgoingBody(length: $0) })
            return .send
        case (.sending(var body?), .sent(let unsent)):
            let action = body.sent(unsent: unsent)
            phase = .sending(body)
            return action == .pull ? .pullBody : .none
        case (.sending(var body?), .bodyPiece(let piece)):
            let action = body.received(piece)
            phase = .sending(body)
            switch action {
            case .send(let bytes): return .sendBody(bytes)
            case .broken(let why):
                let error = UpstreamError.unreachable("the request's body \(why)")
                phase = .finished(.failed(error))
                return .deliverFailure(error, closeConnection: true)
            case .none, .pull, .finished: return .none
            }
        case (_, .sent), (_, .bodyPiece):
            return .none
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
