/// Reading a request: its head, its body (whole or streamed), refusals, and the handler's asks.
extension ServerConnectionState {
    mutating func received(startsHead: Bool) -> Action {
        if phase == .idle && startsHead {
            // A new head's first bytes: its deadline runs from the previous answer (or the
            // accept), so a client dripping bytes cannot hold the connection.
            phase = .head
        }
        if clientOwesBytes { clientsTurn() }
        return .none
    }

    /// Whether the client is expected to send (a head, a whole body, or a streamed body its
    /// handler waits for): only then do its silences count against it.
    private var clientOwesBytes: Bool {
        switch phase {
        case .idle, .head: return true
        case .body:
            if case .streaming(let incoming, _) = body { return incoming.isAsked }
            return true
        default: return false
        }
    }

    mutating func begin(_ head: Head) -> Action {
        guard phase == .idle || phase == .head else { return impossible("head") }
        request = head
        grantsTunnel = false
        let hasBody = head.body != .none
        var limit = limits.maxBodyBytes
        if hasBody, case .streamed(let most) = head.delivery { limit = most }
        var refusal: HTTPViolation?
        if !head.isKnownMethod {
            refusal = .methodNotImplemented
        } else if case .length(let length) = head.body, length > UInt64(limit) {
            refusal = .bodyTooLarge(limit: limit)
        }
        startReading(timeout: limits.bodyTimeout)
        if let refusal {
            // Answered on its head: the body (if any) is never read, and the connection closes.
            body = .none
            phase = .refusing(status: refusal.status)
            deadline = .max
            return .dispatch(violation: refusal)
        }
        keepAlive = head.keepAlive && !draining
        guard hasBody else {
            body = .none
            phase = .dispatched
            deadline = .max  // the handler's own timeouts apply
            return .dispatch(violation: nil)
        }
        phase = .body
        if case .streamed = head.delivery {
            // No deadline until the handler asks for the body; then the idle timeout while it
            // waits, within a total that grows with the bytes received.
            let now = clock.now()
            body = .streaming(IncomingBody(limit: limit), since: now)
            readingDeadline = streamDeadline(since: now, received: 0)
            deadline = .max
            return .dispatchStreaming(writeContinue: head.expectsContinue && !head.isHTTP10)
        }
        body = .buffering(limit: limit, read: 0)
        return head.expectsContinue && !head.isHTTP10 ? .writeContinue : .read
    }

    mutating func bodyRead(_ count: Int) -> Action {
        guard phase == .body, case .buffering(let limit, let read) = body else { return impossible("bodyRead") }
        guard read + count <= limit else {
            body = .none
            phase = .refusing(status: 413)
            deadline = .max
            return .dispatch(violation: .bodyTooLarge(limit: limit))
        }
        body = .buffering(limit: limit, read: read + count)
        return .appendBody
    }

    mutating func bodyPiece(_ bytes: [UInt8]) -> Action {
        guard case .streaming(var incoming, let since) = body else { return impossible("bodyPiece") }
        body = .none  // the buffer stays uniquely referenced while it changes
        defer { body = .streaming(incoming, since: since) }
        switch incoming.append(bytes) {
        case .kept:
            readingDeadline = streamDeadline(since: since, received: incoming.received)
            return .none
        case .deliver(let piece):
            readingDeadline = streamDeadline(since: since, received: incoming.received)
            deadline = .max  // the handler's turn
            return .deliver(piece)
        case .overLimit:
            let violation = HTTPViolation.bodyTooLarge(limit: incoming.limit)
            phase = .refusing(status: violation.status)
            deadline = .max
            if case .deliver(let piece) = incoming.finish(.failed(violation)) { return .deliver(piece) }
            return .none
        }
    }

    mutating func messageEnded() -> Action {
        guard phase == .body else {
            // A head without a body was dispatched already; a refused one is not read on.
            return .none
        }
        phase = .dispatched
        switch body {
        case .buffering:
            deadline = .max
            return .dispatch(violation: nil)
        case .streaming(var incoming, let since):
            // The handler has the request already: its answer is awaited.
            body = .none
            defer { body = .streaming(incoming, since: since) }
            deadline = .max
            if case .deliver(let piece) = incoming.finish(.end) { return .deliver(piece) }
            return .none
        case .none:
            return impossible("messageEnded")
        }
    }

    /// The handler asks for a piece of its streamed body.
    mutating func ask() -> Action {
        guard phase != .closed, case .streaming(var incoming, let since) = body else { return .deliver(.failed(nil)) }
        body = .none
        defer { body = .streaming(incoming, since: since) }
        if let piece = incoming.ask() {
            deadline = .max
            return .deliver(piece)
        }
        // Nothing buffered: the client must keep sending.
        if phase == .body { clientsTurn() }
        return .read
    }

    /// The parser refused the stream.
    mutating func refused(_ violation: HTTPViolation) -> Action {
        switch phase {
        case .idle, .head, .body:
            if case .streaming(var incoming, let since) = body {
                // The streamed body's handler answers it, with the violation's status.
                phase = .refusing(status: violation.status)
                deadline = .max
                body = .none
                defer { body = .streaming(incoming, since: since) }
                if case .deliver(let piece) = incoming.finish(.failed(violation)) { return .deliver(piece) }
                return .none
            }
            body = .none
            if phase != .body { request = Head() }  // not the previous request's facts
            phase = .refusing(status: violation.status)
            deadline = clock.now() &+ limits.idleTimeout
            return .dispatchRefusal(violation)
        default:
            return impossible("violation")  // nothing is parsed while reading is paused
        }
    }

    /// The refusal status the current answer gets, if the request was refused.
    var refusalStatus: Int? {
        if case .refusing(let status) = phase { return status }
        return nil
    }
}
