import COpenSSL
import CloakCore

/// One accepted connection: its ``ServerTransport`` read by a ``RequestParser`` and steered by a
/// ``ServerConnectionState``, which decide everything; this class carries out their actions.
/// Loop thread only (every entry point is a loop callback or an answer queued to the loop).
///
/// ```
///  socket ─▶ ServerTransport ─▶ [PROXY header] ─▶ RequestParser ─▶ ServerConnectionState
///   (plain or TLS, pausable)      (once, first)   (heads, bodies)    (dispatch, write, close)
///                                                                            │
///  socket ◀─ ServerTransport ◀──────── MessageWriter ◀── answer ◀── LoopWorker.dispatch
/// ```
/// Reading pauses from a request's end until its answer has left (the state machine says
/// so), so pipelined requests wait in the socket: memory per connection is one read buffer,
/// the unparsed rest of one read, and the body of the request being read (at most the limit).
///
/// Loop thread only, and reached only from there: its transport's events, and the worker's
/// ``LoopBound`` state (answers and body pulls are looked up there, which checks the thread).
/// So its hot fields skip the runtime's exclusivity checks (`@exclusivity(unchecked)`).
final class ServerConnection: ServerTransportOwner {
    unowned let worker: LoopWorker
    /// The connection's number on its loop (set at accept), by which an answer finds it.
    var id: UInt64 = 0
    private(set) var transport: ServerTransport!
    @exclusivity(unchecked) private var parser: RequestParser
    @exclusivity(unchecked) private var machine = ServerConnectionState()
    /// The peer's numeric address (a balancer's, behind one).
    let peer: String
    /// The address this connection counts under in the per-address budget, once counted.
    var addressKey: String?
    /// Set on a `server.proxy_protocol` listener until the header has been read.
    private var proxyHeader: [UInt8]?
    /// The client address a PROXY header named (nil: none, or `LOCAL`).
    private(set) var proxiedSource: String?
    /// A PROXY header named no client: no forwarding header is believed.
    private(set) var namedNoClient = false
    /// TLS is started after the PROXY header (a TLS listener behind a balancer).
    private let tlsAfterProxyHeader: OpaquePointer?
    /// For a connection inside a CONNECT tunnel: where its requests go.
    private(set) var tunnel: ProxyTarget?
    /// A granted CONNECT whose answer is being written: TLS starts with this context once it has left.
    private var grantedTunnel: (target: ProxyTarget, context: OpaquePointer)?

    /// Bytes read and not parsed yet; `inputStart` is the first of them.
    @exclusivity(unchecked) private var input: [UInt8] = []
    private var inputStart = 0
    /// The request being read.
    @exclusivity(unchecked) private var head: RequestHead?
    @exclusivity(unchecked) private var body: [UInt8] = []
    /// The current request was refused before its body was read (too large): the rest of its
    /// bytes are never read.
    private var refusedEarly = false
    /// The current request's body goes to its handler as it arrives, at most this many bytes.
    private var streamLimit: Int?
    /// The bytes of a streamed body handed out so far.
    private var streamedBytes = 0
    /// When the streamed body's handler was dispatched (its deadline counts from there).
    private var streamStart: UInt64 = 0
    /// The handler's pending ask for the next piece of a streamed body.
    private var pull: (@Sendable (RequestBodyStream.Piece) -> Void)?
    /// How a streamed body ended (given again to every later ask).
    private var streamEnd: RequestBodyStream.Piece?
    /// The answer being made is a refusal (of the stream, or of a request on its head): it has
    /// this status whatever the handler says, and closes the connection.
    private var refusalStatus: Int?
    /// Numbers each dispatched request: an answer for another one is dropped.
    private(set) var serial: UInt64 = 0
    /// The request answered is a HEAD (its answer has no body) or an HTTP/1.0 one.
    private var answeringHead = false
    /// A streamed answer being sent: its producer, the bytes it still owes, whether a piece is asked for.
    private var answerSource: StreamedBody?
    private var answerRemaining = 0
    private var answerPulling = false
    private var answeringHTTP10 = false
    /// Nanoseconds of the monotonic clock past which the connection is timed out: the head's or
    /// the body's deadline (``readingDeadline``), or sooner when the client sends nothing for the
    /// idle timeout; while an answer is written, the idle timeout from its start.
    private(set) var deadline: UInt64
    private var readingDeadline: UInt64
    /// Inside ``process()``: an answer given synchronously is written, and the loop goes on.
    private var processing = false
    private(set) var isClosed = false

    init?(
        fd: Int32, peer: String, worker: LoopWorker, afterConnect: RequestFraming.AfterConnect,
        proxyProtocol: Bool, tls: OpaquePointer?, now: UInt64
    ) {
        self.worker = worker
        self.peer = peer
        let limits = RequestParser.Limits(maxHeadBytes: max(worker.configuration.maxHeaderBytes, 64))
        parser = RequestParser(limits: limits, afterConnect: afterConnect)
        proxyHeader = proxyProtocol ? [] : nil
        tlsAfterProxyHeader = proxyProtocol ? tls : nil
        readingDeadline = now &+ worker.headerTimeout
        deadline = min(readingDeadline, now &+ worker.idleTimeout)
        guard let transport = ServerTransport(fd: fd, base: worker.base, buffer: worker.readBuffer, owner: self) else {
            return nil
        }
        self.transport = transport
        if !proxyProtocol, let tls, !transport.startTLS(tls) { return nil }
    }

    /// The client's address: the one a PROXY header named, else the peer's.
    var clientAddress: String { proxiedSource ?? peer }

    func start() { transport.resumeReading() }

    // MARK: Reading

    func transportReceived(_ bytes: UnsafeRawBufferPointer) {
        if proxyHeader != nil {
            readProxyHeader(bytes)
            return
        }
        if machine.phase == .idle && inputStart == input.count {
            // A new head's first bytes: its deadline runs from the previous answer (or the
            // accept), so a client dripping bytes cannot hold the connection.
            _ = machine.event(.headBegun)
        }
        if isReadingPhase { deadline = min(readingDeadline, LoopWorker.now() &+ worker.idleTimeout) }
        if inputStart == input.count {
            input.removeAll(keepingCapacity: input.capacity <= 4 << 10)
            inputStart = 0
        }
        input.append(contentsOf: bytes)
        process()
    }

    /// Parses what was read while the state machine reads; pauses the transport when it does not.
    private func process() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while !isClosed && isReadingPhase {
            let (consumed, event) = input.withUnsafeBytes { raw in
                parser.parse(UnsafeRawBufferPointer(rebasing: raw[inputStart...]))
            }
            let range = inputStart..<(inputStart + consumed)
            inputStart += consumed
            if event == .needMore { break }
            handle(event, in: range)
        }
        guard !isClosed else { return }
        if isReadingPhase { transport.resumeReading() } else { transport.pauseReading() }
    }

    private var isReadingPhase: Bool {
        switch machine.phase {
        case .idle, .head: return true
        case .body: return !refusedEarly && (streamLimit == nil || pull != nil)
        default: return false
        }
    }

    private func handle(_ event: RequestParser.Event, in consumed: Range<Int>) {
        switch event {
        case .needMore:
            break
        case .head(let head):
            begin(head)
        case .body(let range):
            let start = consumed.lowerBound
            if let limit = streamLimit {
                streamedBytes += range.count
                guard streamedBytes <= limit else { return refuseEarly(.bodyTooLarge(limit: limit)) }
                readingDeadline = streamDeadline()
                let piece = Array(input[(start + range.lowerBound)..<(start + range.upperBound)])
                return deliver(.bytes(piece))
            }
            guard body.count + range.count <= worker.configuration.maxBodyBytes else {
                return refuseEarly(.bodyTooLarge(limit: worker.configuration.maxBodyBytes))
            }
            body.append(contentsOf: input[(start + range.lowerBound)..<(start + range.upperBound)])
        case .end:
            guard machine.phase == .body else { return }  // a head without a body was dispatched already
            act(machine.event(.messageEnded))
            // After the state machine knows: an answer given on the end keeps the connection.
            if streamLimit != nil { deliver(.end) }
        case .tunnel:
            // Never made here (no listener passes CONNECT bytes through): refused like a violation.
            violation(.malformedFraming(reason: "a tunnel this listener does not open"), method: nil)
        case .violation(let refused):
            violation(HTTPViolation(refused), method: parser.refusedMethod)
        }
    }

    private func begin(_ head: RequestHead) {
        self.head = head
        body.removeAll(keepingCapacity: body.capacity <= 64 << 10)
        refusedEarly = false
        streamLimit = nil
        streamedBytes = 0
        streamEnd = nil
        pull = nil
        let keepAlive = !HTTPSyntax.asksToClose(head.headers, isHTTP10: !head.isHTTP11)
        let expectsContinue =
            head.isHTTP11 && head.header("Expect").map { $0.caseInsensitiveEquals("100-continue") } == true
        let isConnect = head.method == "CONNECT"
        var hasBody = head.body != .none
        var early: HTTPViolation?
        var limit = worker.configuration.maxBodyBytes
        if let method = HTTPMethod(rawValue: head.method) {
            if hasBody, let delivery = worker.bodyDelivery,
                case .streamed(let most) = delivery(method, head.requestTarget.path)
            {
                streamLimit = most
                limit = most
            }
        } else {
            early = .methodNotImplemented
        }
        if early == nil, case .length(let length) = head.body, length > UInt64(limit) {
            early = .bodyTooLarge(limit: limit)
        }
        if early != nil {
            hasBody = false
            streamLimit = nil
        }
        refusalStatus = early?.status
        startReading(timeout: worker.bodyTimeout)
        let action = machine.event(
            .head(
                keepAlive: keepAlive && early == nil,
                hasBody: hasBody, expectsContinue: expectsContinue && early == nil,
                isConnect: isConnect, streamsBody: streamLimit != nil))
        if let early {
            // Answered on its head: the body (if any) is never read, and the connection closes.
            refusedEarly = true
            return dispatch(head, violation: early)
        }
        act(action)
    }

    /// A body past the limit as it arrives (chunked): refused now, the rest unread. A streamed
    /// body's handler has the request already: its stream fails, and its answer gets the status.
    private func refuseEarly(_ violation: HTTPViolation) {
        guard let head, !refusedEarly else { return }
        refusedEarly = true
        refusalStatus = violation.status
        transport.pauseReading()
        if streamLimit != nil { return deliver(.failed(violation)) }
        dispatch(head, violation: violation)
    }

    // MARK: Streamed bodies

    /// A streamed body must arrive at 16 KiB a second on average, past the body timeout: the
    /// deadline moves on with the bytes that came, so a client trickling a large upload (a byte
    /// every idle timeout) is cut at the body timeout, not at what its limit would allow.
    private func streamDeadline() -> UInt64 {
        streamStart &+ worker.bodyTimeout &+ UInt64(streamedBytes) &* 1_000_000_000 / UInt64(16 << 10)
    }

    /// The handler of request `serial` asks for the next piece of its body.
    func pullBody(for serial: UInt64, _ receive: @escaping @Sendable (RequestBodyStream.Piece) -> Void) {
        guard serial == self.serial, !isClosed, streamLimit != nil else { return receive(.failed(nil)) }
        if let end = streamEnd { return receive(end) }
        guard pull == nil else { return receive(.failed(nil)) }  // one ask at a time
        pull = receive
        deadline = min(readingDeadline, LoopWorker.now() &+ worker.idleTimeout)  // the client must keep sending
        if !processing { process() }
    }

    /// Hands a piece to the pending ask (there is one: the body is read only while asked for).
    private func deliver(_ piece: RequestBodyStream.Piece) {
        if case .bytes = piece {} else { streamEnd = piece }
        guard let receive = pull else { return }
        pull = nil
        deadline = .max  // the handler's turn
        receive(piece)
    }

    /// The parser refused the stream: answered (by the handler, in the service's format) with
    /// the violation's status, then closed.
    private func violation(_ violation: HTTPViolation, method: String?) {
        if streamLimit != nil { deliver(.failed(violation)) }
        let action = machine.event(.violation(status: violation.status))
        guard case .writeErrorAndClose = action else { return close() }
        refusalStatus = violation.status
        let method = method.flatMap(HTTPMethod.init(rawValue:)) ?? .GET
        var refused = RequestHead(method: method.rawValue, target: "/", isHTTP11: true, headers: [], body: .none)
        refused.requestTarget = RequestTarget(rawPath: "/", path: "/")
        deadline = LoopWorker.now() &+ worker.idleTimeout
        dispatch(refused, violation: violation)
    }

    private func act(_ action: ServerConnectionState.Action) {
        switch action {
        case .none, .read:
            break
        case .dispatchStreaming(let writeContinue):
            guard let head else { return }
            if writeContinue && !hasUnparsedInput { transport.send(MessageWriter.continueLine) }
            // No deadline until the handler asks for the body, then the idle timeout while it
            // waits for bytes, within a total that grows with the bytes received (``streamDeadline()``):
            // a large upload on a slow link is not cut at the body timeout.
            streamStart = LoopWorker.now()
            readingDeadline = streamDeadline()
            deadline = .max
            dispatch(head, violation: nil, streamed: true)
        case .writeContinue:
            // Only while none of the body has arrived (RFC 9110 10.1.1: a client that sent it
            // already needs no invitation, and would read the 100 as its answer).
            if !hasUnparsedInput { transport.send(MessageWriter.continueLine) }
        case .dispatch:
            guard let head else { return }
            dispatch(head, violation: nil)
        case .write, .startTunnel:
            break  // answered in answer(_:for:)
        case .writeErrorAndClose(let status):
            timedOut(status)
        case .close:
            close()
        }
    }

    private func dispatch(_ head: RequestHead, violation: HTTPViolation?, streamed: Bool = false) {
        serial &+= 1
        answeringHead = head.method == "HEAD"
        answeringHTTP10 = !head.isHTTP11
        if violation == nil {
            deadline = .max  // the handler's own timeouts apply
        }
        let requestBody = body
        body = []
        let stream = streamed ? RequestBodyStream(worker: worker, connection: id, serial: serial) : nil
        worker.dispatch(head, body: requestBody, stream: stream, violation: violation, on: self, serial: serial)
    }

    // MARK: Writing

    /// The handler's answer to request `serial` (dropped when the connection has moved on).
    func answer(_ response: HTTPResponse, for serial: UInt64, tunnel granted: (ProxyTarget, OpaquePointer)? = nil) {
        guard !isClosed, serial == self.serial else { return }
        if let status = refusalStatus {
            // A refusal: the state machine closed already (or stops reading); the answer goes, then the connection.
            refusalStatus = nil
            var response = response
            response.status = status
            return writeAndClose(response)
        }
        let closes = MessageWriter.asksToClose(response) || worker.isDraining
        let action = machine.event(.answer(close: closes))
        guard action == .write else { return }
        grantedTunnel = granted.map { (target: $0.0, context: $0.1) }
        let persistence: MessageWriter.Persistence =
            !machine.answerKeepsConnection ? .close : answeringHTTP10 ? .keepAlive10 : .keepAlive11
        let bytes = MessageWriter.response(
            response, persistence: granted != nil ? .keepAlive11 : persistence, headOnly: answeringHead,
            tunnel: granted != nil, date: worker.dateText())
        deadline = LoopWorker.now() &+ worker.idleTimeout
        if let source = response.bodySource, !answeringHead, granted == nil {
            answerSource = source
            answerRemaining = response.streamedLength
        }
        guard transport.send(bytes) else { return transportClosed() }
        if !transport.isSending { sentSoFar() }
    }

    /// What was given to the transport has left: the next piece of a streamed answer, or the end.
    private func sentSoFar() {
        guard let source = answerSource else { return written() }
        guard !answerPulling else { return }
        answerPulling = true
        let id = self.id
        let serial = self.serial
        source.next { [worker] piece in
            worker.execute {
                guard let connection = worker.state.value.connections[id], connection.serial == serial else { return }
                connection.answerPiece(piece)
            }
        }
    }

    /// A piece of a streamed answer: sent, or the answer ends (closed mid-body when it broke
    /// its promised length or its producer failed).
    private func answerPiece(_ piece: StreamedBody.Piece) {
        answerPulling = false
        guard !isClosed, answerSource != nil else { return }
        switch piece {
        case .bytes(let bytes):
            answerRemaining -= bytes.count
            guard answerRemaining >= 0 else { return close() }
            deadline = LoopWorker.now() &+ worker.idleTimeout
            guard transport.send(bytes) else { return transportClosed() }
            if !transport.isSending { sentSoFar() }
        case .end:
            answerSource = nil
            guard answerRemaining == 0 else { return close() }
            written()
        case .failed:
            close()
        }
    }

    private func writeAndClose(_ response: HTTPResponse) {
        let bytes = MessageWriter.response(
            response, persistence: .close, headOnly: answeringHead, date: worker.dateText())
        transport.send(bytes)
        closeGracefully()
    }

    func transportSent() {
        if machine.phase == .writing { sentSoFar() }
    }

    /// The answer's last byte left.
    private func written() {
        if let granted = grantedTunnel {
            grantedTunnel = nil
            guard machine.event(.tunnelGranted) == .startTunnel else { return close() }
            return openTunnel(granted.target, context: granted.context)
        }
        let action = machine.event(.written)
        switch action {
        case .read:
            head = nil
            startReading(timeout: worker.headerTimeout)
            if !processing { process() }
        case .close:
            closeGracefully()
        default:
            break
        }
    }

    /// A granted CONNECT's answer has left: the client's next bytes are TLS, and the requests
    /// inside are read afresh.
    private func openTunnel(_ target: ProxyTarget, context: OpaquePointer) {
        guard inputStart == input.count, transport.startTLS(context) else { return close() }
        tunnel = target
        machine = ServerConnectionState()
        parser = RequestParser(limits: parser.limits, afterConnect: .keepScanning)
        head = nil
        startReading(timeout: worker.headerTimeout)
        transport.resumeReading()
    }

    /// Whether bytes past the current request were read already (a client that did not wait).
    var hasUnparsedInput: Bool { inputStart < input.count }

    // MARK: Ending

    /// A head (or a body) must be complete `timeout` from now, and bytes must keep coming.
    private func startReading(timeout: UInt64) {
        let now = LoopWorker.now()
        readingDeadline = now &+ timeout
        deadline = min(readingDeadline, now &+ worker.idleTimeout)
    }

    /// A deadline passed (the worker's sweep).
    func deadlinePassed() {
        // A lingering close that lasted too long, or a connection closed without one.
        if transport.isClosing || machine.phase == .closed { return close() }
        act(machine.event(.deadline))
    }

    /// The server drains: an idle connection closes now, the others after their answer.
    func drain() {
        act(machine.event(.drain))
    }

    /// The header or body deadline of a begun request: 408, then closed.
    private func timedOut(_ status: Int) {
        if streamLimit != nil { deliver(.failed(nil)) }
        let body = worker.configuration.timeoutRefusalBody
        transport.send(
            MessageWriter.response(
                .json(status, body), persistence: .close, headOnly: false, date: worker.dateText()))
        closeGracefully()
    }

    /// Sends what is queued, ends the sending side, and reads (dropping) until the client
    /// closes or the linger deadline passes.
    private func closeGracefully() {
        deadline = LoopWorker.now() &+ Self.lingerNanoseconds
        transport.closeWhenSent()
    }

    static let lingerNanoseconds: UInt64 = 2_000_000_000

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
        if streamLimit != nil && streamEnd == nil { deliver(.failed(nil)) }
    }

    /// Closes the socket without telling the worker (which is being torn down).
    func closeWithoutReport() {
        guard !isClosed else { return }
        isClosed = true
        transport.close()
    }

    // MARK: PROXY protocol

    private func readProxyHeader(_ bytes: UnsafeRawBufferPointer) {
        guard var header = proxyHeader else { return }
        header.append(contentsOf: bytes)
        switch ProxyProtocolHeader.parse(header) {
        case .needMore:
            guard header.count < 16 + ProxyProtocolHeader.maxV2Length else {
                return refuseProxy("proxy_header_invalid")
            }
            proxyHeader = header
        case .invalid:
            refuseProxy("proxy_header_invalid")
        case .local(let length):
            namedNoClient = true
            proxyHeaderRead(header, length: length)
        case .proxied(let source, let length):
            guard worker.admitProxied(source, for: self) else { return refuseProxy("proxy_address_limit") }
            proxiedSource = source
            proxyHeaderRead(header, length: length)
        }
    }

    private func proxyHeaderRead(_ header: [UInt8], length: Int) {
        proxyHeader = nil
        let rest = header[length...]
        if let context = tlsAfterProxyHeader {
            let started = rest.withUnsafeBytes { transport.startTLS(context, initial: $0) }
            guard started else { return refuseProxy("tls_session_failed") }
            // The ClientHello often came in the same read as the header: decrypted on the next
            // turn (the read event is on already, and nothing else would fire it).
            transport.readSoon()
        } else if !rest.isEmpty {
            rest.withUnsafeBytes { transportReceived($0) }
        }
    }

    private func refuseProxy(_ reason: String) {
        ConnectionNotices.shared.report(reason)
        close()
    }
}
