/// What passes between a connection and its handler: the request (a streamed body's pieces as
/// the handler asks), and the answer, whole or streamed from its producer as the socket takes it
/// (the machine's ``ServerConnectionState/BodyFlow`` and ``ServerConnectionState/AnswerFlow``);
/// and the tunnel a granted CONNECT opens.
extension ServerConnection {
    func dispatch(_ head: RequestHead, violation: HTTPViolation?, streamed: Bool = false) {
        serial &+= 1
        let requestBody = body
        body = []
        let content: HTTPBody
        if streamed {
            let stream = BodyStream { [worker, id, serial] receive in
                worker.execute {
                    guard let open = worker.state.value.connections[id] else { return receive(.failed(nil)) }
                    open.askForBody(for: serial, receive)
                }
            }
            content = .stream(stream, length: head.body.length)
        } else {
            content = .bytes(requestBody)
        }
        worker.dispatch(
            head, body: content, route: violation == nil ? routed : nil, violation: violation, on: self, serial: serial)
    }

    /// A handler's ask that will get nothing more: the connection ends.
    func failWaitingReader() {
        guard let receive = waitingReader else { return }
        waitingReader = nil
        receive(.failed(nil))
    }

    /// The handler of request `serial` asks for the next piece of its body.
    func askForBody(for serial: UInt64, _ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        guard serial == self.serial, !isClosed, waitingReader == nil else { return receive(.failed(nil)) }
        waitingReader = receive
        act(machine.event(.ask))
    }

    /// The handler's answer to request `serial` (dropped when the connection has moved on).
    func answer(_ response: HTTPResponse, for serial: UInt64, tunnel granted: (ProxyTarget, TLSServerContext)? = nil) {
        guard !isClosed, serial == self.serial else { return }
        // A stream that promises no length could only be written as a whole empty message
        // followed by bytes: the connection closes instead (the client sees no answer at all).
        if case .stream(_, nil) = response.content { return close() }
        let given = ServerConnectionState<LoopClock>.Answer(
            close: MessageWriter.asksToClose(response) || worker.isDraining,
            streamedLength: MessageWriter.allowsBody(response.status) ? response.content.streamedLength : nil,
            grantsTunnel: granted != nil)
        guard case .write(let write) = machine.event(.answer(given)) else { return }
        var response = response
        if let status = write.status {
            response.status = status
            response.content = .bytes(response.content.bytes)
        }
        if let granted { grantedTunnel = (target: granted.0, context: granted.1) }
        answerStream = write.streams ? response.content.stream : nil
        let bytes = MessageWriter.response(
            response, persistence: write.persistence, headOnly: write.headOnly, tunnel: granted != nil,
            date: worker.dateText())
        send(bytes)
    }

    /// Gives bytes of the answer to the transport, and tells the machine what is left to send.
    func send(_ bytes: [UInt8]) {
        guard transport.send(bytes) == .accepted else { return streamClosed(nil) }
        act(machine.event(.sent(unsent: transport.unsent)))
    }

    func streamDrained() {
        act(machine.event(.sent(unsent: transport.unsent)))
    }

    /// Asks the streamed answer's producer for its next piece (answered on any thread).
    func pullAnswer() {
        guard let source = answerStream else { return }
        let id = self.id
        let serial = self.serial
        source.next { [worker] piece in
            worker.execute {
                guard let connection = worker.state.value.connections[id], connection.serial == serial else { return }
                connection.answerPiece(piece)
            }
        }
    }

    private func answerPiece(_ piece: BodyStream.Piece) {
        guard !isClosed else { return }
        switch machine.event(.answerPiece(piece, unsent: transport.unsent)) {
        case .send(let bytes): send(bytes)
        case let other: act(other)
        }
    }

    /// A granted CONNECT's answer has left: the client's next bytes are TLS, and the requests
    /// inside are read afresh.
    func openTunnel(_ target: ProxyTarget, context: TLSServerContext) {
        guard inputStart == input.count, transport.startTLS(context) else { return close() }
        tunnel = target
        machine = machine.restarted()
        parser = RequestParser(limits: parser.limits, afterConnect: .keepScanning)
        head = nil
        transport.resumeReading()
    }
}
