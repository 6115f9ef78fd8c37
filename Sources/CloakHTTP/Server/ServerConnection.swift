import CloakCore

/// One accepted connection: its ``SocketStream`` read by a ``RequestParser`` and steered by a
/// ``ServerConnectionState``, which decides everything, how bodies and answers flow and every
/// deadline included; this class only carries out its actions (issue 58).
///
/// ```
///  socket ─▶ SocketStream ─▶ [PROXY header] ─▶ RequestParser ─▶ ServerConnectionState
///   (plain or TLS, pausable)   (once, first)   (heads, bodies)    (dispatch, write, close)
///                                                                            │
///  socket ◀─ SocketStream ◀─────────── MessageWriter ◀── answer ◀── LoopWorker.dispatch
/// ```
/// Reading pauses whenever the machine does not read (``ServerConnectionState/readsInput``), so
/// pipelined requests wait in the socket: memory per connection is one read buffer, the
/// unparsed rest of one read, and the body of the request being read (a whole one within its
/// limit, a streamed one within its watermarks).
///
/// Loop thread only, and reached only from there: its transport's events, and the worker's
/// ``LoopBound`` state (answers and body asks are looked up there, which checks the thread).
/// So its hot fields skip the runtime's exclusivity checks (`@exclusivity(unchecked)`).
///
/// By concern: reading and carrying out here; writing the answer and opening a granted tunnel
/// in `+Handler`; the PROXY header in `+Proxy`. Fields are changed only by these files.
final class ServerConnection: SocketStreamOwner {
    unowned let worker: LoopWorker
    /// The connection's number on its loop (set at accept), by which an answer finds it.
    var id: UInt64 = 0
    @exclusivity(unchecked) private(set) var transport: SocketStream!
    @exclusivity(unchecked) var parser: RequestParser
    @exclusivity(unchecked) var machine: ServerConnectionState<LoopClock>
    /// The peer's numeric address (a balancer's, behind one).
    let peer: String
    /// The address this connection counts under in the per-address budget, once counted.
    var addressKey: String?
    /// The PROXY header while it is read, and what it said (``ServerConnection+Proxy``).
    var proxy: ProxyPrefix
    /// For a connection inside a CONNECT tunnel: where its requests go.
    var tunnel: ProxyTarget?
    /// A granted CONNECT whose answer is being written: TLS starts with this context once it has left.
    @exclusivity(unchecked) var grantedTunnel: (target: ProxyTarget, context: TLSServerContext)?
    /// Bytes read and not parsed yet; `inputStart` is the first of them.
    @exclusivity(unchecked) var input: [UInt8] = []
    @exclusivity(unchecked) var inputStart = 0
    /// The request being read, and its whole body.
    @exclusivity(unchecked) var head: RequestHead?
    @exclusivity(unchecked) var body: [UInt8] = []
    /// What the service's router found on the current head (``HeadRoute``), for its handler.
    @exclusivity(unchecked) var routed: (any Sendable)?
    /// The handler's ask for the next piece of its streamed body, while it waits.
    @exclusivity(unchecked) var waitingReader: (@Sendable (BodyStream.Piece) -> Void)?
    /// The current answer's producer, for a streamed answer.
    @exclusivity(unchecked) var answerStream: BodyStream?
    /// Numbers each dispatched request: an answer for another one is dropped.
    @exclusivity(unchecked) var serial: UInt64 = 0
    /// Inside ``process()``: an answer given synchronously is written, and the loop goes on.
    @exclusivity(unchecked) private var processing = false
    @exclusivity(unchecked) private(set) var isClosed = false

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
        guard let transport = SocketStream(fd: fd, base: worker.base, buffer: worker.readBuffer, owner: self) else {
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

    func streamReceived(_ bytes: UnsafeRawBufferPointer, more: Bool) {
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
        routed = nil
        if head.body != .none, let method, let route = worker.route {
            let found = route(method, head.requestTarget.rawPath)
            delivery = found.body
            routed = found.found
        }
        return .init(
            keepAlive: !HTTPSyntax.asksToClose(head.headers, isHTTP10: !head.isHTTP11),
            expectsContinue: head.header("Expect").map { $0.caseInsensitiveEquals("100-continue") } == true,
            isConnect: head.method == "CONNECT", isHeadMethod: head.method == "HEAD", isHTTP10: !head.isHTTP11,
            isKnownMethod: method != nil, body: head.body, delivery: delivery)
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
            // The buffer was handed out: reading ahead may go on (nothing when parsing already).
            if !processing && !isClosed && machine.readsInput { process() }
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

    /// Whether bytes past the current request were read already (a client that did not wait).
    var hasUnparsedInput: Bool { inputStart < input.count }

    // MARK: Ending

    /// A deadline passed (the worker's sweep).
    func deadlinePassed() { act(machine.event(.deadline)) }

    /// The server drains: an idle connection closes now, the others after their answer.
    func drain() { act(machine.event(.drain)) }

    func streamClosed(_ error: String?) {
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
