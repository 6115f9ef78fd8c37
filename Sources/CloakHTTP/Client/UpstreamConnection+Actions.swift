import CloakCore

/// Carrying out what an exchange's ``ExchangeState`` decides: its streamed body's pieces as the
/// socket takes them, and its answer or failure, after which the connection goes back to its
/// pool (or closes).
extension UpstreamConnection {
    func streamDrained() {
        guard let exchange = state.current else { return }
        carryOut(exchange.handle(.sent(unsent: state.transport?.unsent ?? 0)), exchange)
    }

    /// Asks the body's producer for its next piece (its flow is the exchange's
    /// ``ExchangeState``); the piece comes back on this loop (the producer's promise).
    func pullBody(_ exchange: Exchange) {
        guard let source = exchange.request.content.stream else { return }
        let pulled = LoopBound(BodyPull(connection: self, exchange: exchange), loop: pool.thread)
        source.next { piece in
            let pull = pulled.value
            guard let connection = pull.connection, connection.state.current === pull.exchange else { return }
            connection.carryOut(pull.exchange.handle(.bodyPiece(piece)), pull.exchange)
        }
    }

    struct BodyPull {
        weak var connection: UpstreamConnection?
        let exchange: Exchange
    }

    func sendBody(_ bytes: [UInt8], _ exchange: Exchange) {
        guard let transport = state.transport, transport.send(bytes) == .accepted else {
            return carryOut(exchange.handle(.failed(.unreachable("cannot send the request"))), exchange)
        }
        carryOut(exchange.handle(.sent(unsent: transport.unsent)), exchange)
    }

    // MARK: Outcomes

    func answer(_ exchange: Exchange, reusable: Bool) {
        guard let parser = state.parser else { return }
        state.parser = nil
        var headers = withoutHopByHop(parser.headers)
        headers.removeAll {
            // Cloak sets its own (in place: the array is this function's alone).
            $0.name.caseInsensitiveEquals("content-length") || $0.name.caseInsensitiveEquals("x-request-id")
        }
        carryOut(
            exchange.handle(.answered(reusable: reusable && parser.reusable)), exchange,
            answer: HTTPResponse(status: parser.status, headers: headers, body: parser.body))
    }

    /// Does what the exchange's state machine decided.
    func carryOut(_ action: ExchangeState.Action, _ exchange: Exchange, answer: HTTPResponse? = nil) {
        switch action {
        case .none, .send:
            return
        case .pullBody:
            pullBody(exchange)
        case .sendBody(let bytes):
            sendBody(bytes, exchange)
        case let .deliverAnswer(reuse):
            finish(
                exchange, answer.map { .success($0) } ?? .failure(.badResponse("no answer")), reusable: reuse,
                failed: false)
        case let .deliverFailure(error, _):
            var unreachable = false
            if case .unreachable = error { unreachable = true }
            finish(exchange, .failure(error), reusable: false, failed: unreachable)
        case .cancelAndTimeOut:
            finish(exchange, .failure(.timeout), reusable: false, failed: false)
        }
    }

    func finish(
        _ exchange: Exchange, _ result: Result<HTTPResponse, UpstreamError>, reusable: Bool, failed: Bool
    ) {
        state.current = nil
        state.parser = nil
        exchange.state.connection = nil
        if !reusable { state.isClosed = true }
        exchange.deliver(result)
        pool.release(self, reusable: reusable, failed: failed)
    }
}
