import CloakCore

/// One accepted connection: its ``ServerTransport`` read by a ``RequestParser`` and steered by a
/// ``ServerConnectionState``, which decides everything, how bodies and answers flow and every
/// deadline included; this class only carries out its actions (issue 58).
///
/// ```
///  socket ─▶ ServerTransport ─▶ [PROXY header] ─▶ RequestParser ─▶ ServerConnectionState
///   (plain or TLS, pausable)      (once, first)   (heads, bodies)    (dispatch, write, close)
///                                                                            │
///  socket ◀─ ServerTransport ◀──────── MessageWriter ◀── answer ◀── LoopWorker.dispatch
/// ```
/// Reading pauses whenever the machine does not read (``ServerConnectionState/readsInput``), so
/// pipelined requests wait in the socket: memory per connection is one read buffer, the
/// unparsed rest of one read, and the body of the request being read (a whole one within its
/// limit, a streamed one within its watermarks).
///
/// Loop thread only, and reached only from there: its transport's events, and the worker's
/// ``LoopBound`` state (answers and body asks are looked up there, which checks the thread).
/// So its hot fields skip the runtime's exclusivity checks (`@exclusivity(unchecked)`).
final class ServerConnection: ServerTransportOwner {
    unowned let worker: LoopWorker
    /// The connection's number on its loop (set at accept), by which an answer finds it.
    var id: UInt64 = 0
    private(set) var transport: ServerTransport!
    @exclusivity(unchecked) private var parser: RequestParser
    @exclusivity(unchecked) var machine: ServerConnectionState<LoopClock>
    /// The peer's numeric address (a balancer's, behind one).
    let peer: String
    /// The address this connection counts under in the per-address budget, once counted.
    var addressKey: String?
    /// The PROXY header while it is read, and what it said (``ServerConnection+Proxy``).
    var proxy: ProxyPrefix
    /// For a connection inside a CONNECT tunnel: where its requests go.
    private(set) var tunnel: ProxyTarget?
    /// A granted CONNECT whose answer is being written: TLS starts with this context once it has left.
    private var grantedTunnel: (target: ProxyTarget, context: TLSServerContext)?
    /// Bytes read and not parsed yet; `inputStart` is the first of them.
    @exclusivity(unchecked) private var input: [UInt8] = []
    private var inputStart = 0
    /// The request being read, and its whole body.
    @exclusivity(unchecked) private var head: RequestHead?
    @exclusivity(unchecked) private var body: [UInt8] = []
    /// The handler's ask for the next piece of its streamed body, while it waits.
    private var waitingReader: (@Sendable (BodyStream.Piece) -> Void)?
    /// The current answer's producer, for a streamed answer.
    private var answerStream: BodyStream?
    /// Numbers each dispatched request: an answer for another one is dropped.
    private(set) var serial: UInt64 = 0
    /// Inside ``process()``: an answer given synchronously is written, and the loop goes on.
    private var processing = false
    private(set) var isClosed = false

    init?(
        fd: Int32, peer: String, worker: LoopWorker, afterConnect: RequestFraming.AfterConnect,
        proxyProtocol: Bool, tls: TLSServerContext?
    ) {
        self.worker = worker
        self.peer = peer
        let limits = RequestParser.Limits(maxHeadBytes: max(worker.configuration.maxHeaderBytes, 64))
        parser = RequestParser(limits: limits, afterConnect: afterConnect)
        machine = ServerConnectionState(limits: worker.connectionLimits, clock: LoopClock())
        proxy = ProxyPrefix(expected: proxyProtocol, tlsAfter: proxyProtocol ? tls : nil)
        guard let transport = ServerTransport(fd: fd, base: worker.base, buffer: worker.readBuffer, owner: self) else {
            return nil
        }
        self.transport = transport
        if !proxyProtocol, let tls, !transport.startTLS(tls) { return nil }
    }

    /// The client's address: the one a PROXY header named, else the peer's.
    var clientAddress: String { proxy.source ?? peer }
    var deadline: UInt64 { machine.deadline }

    func start() { transport.resumeReading() }

    // MARK: Reading

    func transportReceived(_ bytes: UnsafeRawBufferPointer) {
        if proxy.isReading { return readProxyHeader(bytes) }
        let startsHead = inputStart == input.count
        act(machine.event(.received(startsHead: startsHead)))
        if startsHead {
            input.removeAll(keepingCapacity: input.capacity <= 4 << 10)
            inputStart = 0
        }
        input.append(contentsOf: bytes)
        process()
    }

    /// Parses what was read while the machine reads; pauses the transport when it does not.
    func process() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while !isClosed && machine.readsInput {
            let (consumed, event) = input.withUnsafeBytes { raw in
                parser.parse(UnsafeRawBufferPointer(rebasing: raw[inputStart...]))
            }
            let range = inputStart..<(inputStart + consumed)
            inputStart += consumed
            if event == .needMore { break }
            parsed(event, in: range)
        }
        guard !isClosed else { return }
        if machine.readsInput { transport.resumeReading() } else { transport.pauseReading() }
    }

    private func parsed(_ event: RequestParser.Event, in consumed: Range<Int>) {
        switch event {
        case .needMore:
            break
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: body.capacity <= 64 << 10)
            act(machine.event(.head(facts(of: head))))
        case .body(let range):
            let bytes = input[(consumed.lowerBound + range.lowerBound)..<(consumed.lowerBound + range.upperBound)]
            if machine.streamsBody { return act(machine.event(.bodyPiece(Array(bytes)))) }
            let action = machine.event(.bodyRead(count: bytes.count))
            if action == .appendBody { return body.append(contentsOf: bytes) }
            act(action)
        case .end:
            act(machine.event(.messageEnded))
        case .tunnel:
            // Never made here (no listener passes CONNECT bytes through): refused like a violation.
            act(machine.event(.violation(.malformedFraming(reason: "a tunnel this listener does not open"))))
        case .violation(let refused):
            act(machine.event(.violation(HTTPViolation(refused))))
        }
    }

    /// What the machine needs of a head; the router is asked once how its body is read.
    private func facts(of head: RequestHead) -> ServerConnectionState<LoopClock>.Head {
        let method = HTTPMethod(rawValue: head.method)
        var delivery = RequestBodyDelivery.whole
        if head.body != .none, let method, let declared = worker.bodyDelivery {
            delivery = declared(method, head.requestTarget.rawPath)
        }
        return .init(
            keepAlive: !HTTPSyntax.asksToClose(head.headers, isHTTP10: !head.isHTTP11),
            expectsContinue: head.header("Expect").map { $0.caseInsensitiveEquals("100-continue") } == true,
            isConnect: head.method == "CONNECT", isHeadMethod: head.method == "HEAD", isHTTP10: !head.isHTTP11,
            isKnownMethod: method != nil, body: head.body, delivery: delivery)
    }

    /// The handler of request `serial` asks for the next piece of its body.
    func askForBody(for serial: UInt64, _ receive: @escaping @Sendable (BodyStream.Piece) -> Void) {
        guard serial == self.serial, !isClosed, waitingReader == nil else { return receive(.failed(nil)) }
        waitingReader = receive
        act(machine.event(.ask))
    }

    // MARK: Carrying out

    func act(_ action: ServerConnectionState<LoopClock>.Action) {
        switch action {
        case .none, .appendBody:
            break
        case .read:
            if !processing { process() }
        case .dispatch(let violation):
            guard let head else { return }
            dispatch(head, violation: violation)
        case .dispatchStreaming(let writeContinue):
            guard let head else { return }
            if writeContinue && !hasUnparsedInput { transport.send(MessageWriter.continueLine) }
            dispatch(head, violation: nil, streamed: true)
        case .dispatchRefusal(let violation):
            var refused = RequestHead(
                method: parser.refusedMethod ?? "GET", target: "/", isHTTP11: true, headers: [], body: .none)
            if HTTPMethod(rawValue: refused.method) == nil { refused.method = "GET" }
            refused.requestTarget = RequestTarget(rawPath: "/", path: "/")
            dispatch(refused, violation: violation)
        case .writeContinue:
            // Only while none of the body has arrived (RFC 9110 10.1.1: a client that sent it
            // already needs no invitation, and would read the 100 as its answer).
            if !hasUnparsedInput { transport.send(MessageWriter.continueLine) }
        case .deliver(let piece):
            guard let receive = waitingReader else { return }
            waitingReader = nil
            receive(piece)
        case .write, .send:
            preconditionFailure("answers are written in answer(_:for:)")
        case .pullAnswer:
            pullAnswer()
        case .writeErrorAndClose:
            failWaitingReader()
            let refusal = worker.configuration.timeoutRefusalBody
            transport.send(
                MessageWriter.response(
                    .json(408, refusal), persistence: .close, headOnly: false, date: worker.dateText()))
            transport.closeWhenSent()
        case .startTunnel:
            guard let granted = grantedTunnel else { return close() }
            grantedTunnel = nil
            openTunnel(granted.target, context: granted.context)
        case .close:
            close()
        case .closeGracefully:
            transport.closeWhenSent()
        }
    }

    private func dispatch(_ head: RequestHead, violation: HTTPViolation?, streamed: Bool = false) {
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
        worker.dispatch(head, body: content, violation: violation, on: self, serial: serial)
    }

    /// A handler's ask that will get nothing more: the connection ends.
    private func failWaitingReader() {
        guard let receive = waitingReader else { return }
        waitingReader = nil
        receive(.failed(nil))
    }

    /// Whether bytes past the current request were read already (a client that did not wait).
    var hasUnparsedInput: Bool { inputStart < input.count }

    // MARK: Writing

    /// The handler's answer to request `serial` (dropped when the connection has moved on).
    func answer(_ response: HTTPResponse, for serial: UInt64, tunnel granted: (ProxyTarget, TLSServerContext)? = nil) {
        guard !isClosed, serial == self.serial else { return }
        let given = ServerConnectionState<LoopClock>.Answer(
            close: MessageWriter.asksToClose(response) || worker.isDraining,
            streamedLength: response.content.streamedLength,
            grantsTunnel: granted != nil)
        guard case .write(let write) = machine.event(.answer(given)) else { return }
        var response = response
        if let status = write.status {
            response.status = status
            response.content = .bytes(response.content.bytes)
        }
        grantedTunnel = granted.map { (target: $0.0, context: $0.1) }
        answerStream = write.streams ? response.content.stream : nil
        let bytes = MessageWriter.response(
            response, persistence: write.persistence, headOnly: write.headOnly, tunnel: granted != nil,
            date: worker.dateText())
        send(bytes)
    }

    /// Gives bytes of the answer to the transport, and tells the machine what is left to send.
    private func send(_ bytes: [UInt8]) {
        guard transport.send(bytes) else { return transportClosed() }
        act(machine.event(.sent(unsent: transport.unsent)))
    }

    func transportSent() {
        act(machine.event(.sent(unsent: transport.unsent)))
    }

    /// Asks the streamed answer's producer for its next piece (answered on any thread).
    private func pullAnswer() {
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
    private func openTunnel(_ target: ProxyTarget, context: TLSServerContext) {
        guard inputStart == input.count, transport.startTLS(context) else { return close() }
        tunnel = target
        machine = machine.restarted()
        parser = RequestParser(limits: parser.limits, afterConnect: .keepScanning)
        head = nil
        transport.resumeReading()
    }

    // MARK: Ending

    /// A deadline passed (the worker's sweep).
    func deadlinePassed() { act(machine.event(.deadline)) }

    /// The server drains: an idle connection closes now, the others after their answer.
    func drain() { act(machine.event(.drain)) }

    func transportClosed() {
        guard !isClosed else { return }
        _ = machine.event(.peerClosed)
        close()
    }

    /// Closes the socket now and gives back the connection's slots.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        transport.close()
        worker.connectionClosed(self)
        failWaitingReader()
    }

    /// Closes the socket without telling the worker (which is being torn down).
    func closeWithoutReport() {
        guard !isClosed else { return }
        isClosed = true
        transport.close()
    }
}
