/// Writing the answer (whole or streamed), and the connection's ends: written, closed,
/// timed out, drained.
extension ServerConnectionState {
    mutating func answered(_ given: Answer) -> Action {
        let status: Int?
        switch phase {
        case .dispatched:
            keepAlive = keepAlive && !given.close
            status = nil
        case .body:
            // Answered before its body was read (a streamed body's handler that did not read
            // it all): written now, and the connection closes, the rest unread.
            keepAlive = false
            status = nil
        case .refusing(let refusal):
            keepAlive = false
            status = refusal
        case .closed, .writing, .tunnel, .idle, .head:
            // Closed meanwhile (a deadline, the peer): the answer has nowhere to go. A second
            // answer to one request never comes: the connection drops answers by serial.
            return .none
        }
        phase = .writing
        grantsTunnel = given.grantsTunnel && request.isConnect && status == nil
        deadline = clock.now() &+ limits.idleTimeout
        let streams = given.streamedLength != nil && !request.isHeadMethod && !grantsTunnel && status == nil
        answer = streams ? .streaming(OutgoingBody(length: given.streamedLength ?? 0)) : .whole
        let persistence: MessageWriter.Persistence =
            grantsTunnel
            ? .keepAlive11 : !answerKeepsConnection ? .close : request.isHTTP10 ? .keepAlive10 : .keepAlive11
        return .write(Write(status: status, persistence: persistence, headOnly: request.isHeadMethod, streams: streams))
    }

    /// Whether the answer being written keeps the connection.
    var answerKeepsConnection: Bool { keepAlive && !draining }

    mutating func sent(unsent: Int) -> Action {
        guard phase == .writing else { return .none }
        switch answer {
        case .none: return .none
        case .whole: return unsent == 0 ? written() : .none
        case .streaming(var outgoing):
            let action = outgoing.sent(unsent: unsent)
            answer = .streaming(outgoing)
            return action == .pull ? .pullAnswer : .none
        }
    }

    mutating func answerPiece(_ piece: BodyStream.Piece, unsent: Int) -> Action {
        guard phase == .writing, case .streaming(var outgoing) = answer else { return .none }
        let action = outgoing.received(piece)
        answer = .streaming(outgoing)
        switch action {
        case .none, .pull: return .none
        case .send(let bytes):
            deadline = clock.now() &+ limits.idleTimeout
            return .send(bytes)
        case .finished:
            answer = .whole
            return unsent == 0 ? written() : .none
        case .broken:
            // Closed mid-body: the client sees a truncated answer, never a whole one.
            answer = .none
            phase = .closed
            return .close
        }
    }

    /// The answer's last byte left.
    private mutating func written() -> Action {
        answer = .none
        body = .none
        if grantsTunnel {
            phase = .tunnel
            return .startTunnel
        }
        guard keepAlive && !draining else { return closeGracefully() }
        phase = .idle
        startReading(timeout: limits.headerTimeout)
        return .read
    }

    mutating func peerClosed() -> Action {
        switch phase {
        case .dispatched, .writing, .refusing:
            // The answer has nowhere to go; the handler's work finishes unseen.
            keepAlive = false
            return .close
        case .tunnel:
            return .none
        default:
            phase = .closed
            return .close
        }
    }

    mutating func deadlinePassed() -> Action {
        switch phase {
        case .idle, .closed, .dispatched, .writing, .refusing:
            // Idle; a lingering close that lasted too long; an answer that is late, or that
            // the client does not read.
            phase = .closed
            return .close
        case .head, .body:
            if case .streaming(var incoming, let since) = body {
                body = .none
                _ = incoming.finish(.failed(nil))
                body = .streaming(incoming, since: since)
            }
            phase = .closed
            deadline = clock.now() &+ limits.linger
            return .writeErrorAndClose(status: 408)
        case .tunnel:
            return .none
        }
    }

    mutating func drain() -> Action {
        switch phase {
        case .idle:
            phase = .closed
            return .close
        case .closed, .tunnel:
            return .none
        default:
            draining = true
            return .none
        }
    }
}
