import CloakCore
import Foundation

/// One connection to an upstream: a transport (plain or TLS), one exchange at a time, its answer
/// read by a ``ResponseParser``. Owned by its pool.
///
/// The request goes out as one buffer (``MessageWriter/request(_:)``); reading stays on for
/// the connection's life, so bytes that come while it is idle (an answer nobody asked for, or the
/// peer's close) close it rather than wait to be taken for the next exchange's answer.
///
/// What a caller on a reused connection is promised: bytes the upstream sent behind an earlier
/// answer, or while the connection was idle (its end included), are never taken for its
/// answer. Anything waiting to be read when the connection is handed over, which the transport
/// looks for right before the request's first byte goes into the socket (in the hand-over's
/// own call), makes the connection unusable: it closes, and the exchange, nothing of it sent,
/// goes to another connection (``UpstreamWriteOutcome/inputWaiting``). Bytes that
/// arrive while part of the request is still unsent fail the exchange (502, 1401) and close
/// the connection, since the request has gone and cannot be sent elsewhere. What an upstream
/// sends after that look is, in HTTP/1.1, its answer as far as any client can tell (a thread
/// descheduled between the look and the write widens that moment): routes whose upstream must
/// never share a connection set `reuse: false` (docs/threat-model.md, "Upstream connections").
/// A look after the write cannot tell those bytes from a fast upstream's answer: tried, it
/// refused a fifth of the answers of an upstream on the same machine.
final class UpstreamConnection: UpstreamTransportOwner {
    private unowned let pool: UpstreamPool
    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var transport: (any UpstreamTransport)?
        var current: Exchange?
        var parser: ResponseParser?
        var isClosed: Bool = false
        var freeScheduled: Bool = false
        var connected: Bool = false
        /// Exchanges started on it: from the second on, bytes that came ahead of the request
        /// may be an earlier exchange's.
        var exchangesStarted = 0
        /// Set until the first exchange's TCP connect (and TLS handshake) ends.
        var connectTimer: LoopEvent?
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init?(pool: UpstreamPool, address: String) {
        self.state = LoopBound(State(), loop: pool.thread)
        self.pool = pool
        let transport: any UpstreamTransport
        if let tls = pool.tls {
            guard let made = TLSTransport(base: pool.base, tls: tls, host: pool.host, owner: self) else { return nil }
            transport = made
        } else {
            transport = PlainTransport(base: pool.base, owner: self)
        }
        guard transport.connect(to: address, port: pool.port) else {
            transport.close()
            return nil
        }
        state.transport = transport
    }

    /// Frees the connection on the next loop turn: never from inside one of its own callbacks.
    func scheduleFree() {
        guard !state.freeScheduled else { return }
        state.freeScheduled = true
        state.isClosed = true
        pool.base.onNextTurn(
            { _, _, arg in
                let connection: UpstreamConnection = CallbackContext.release(arg!)
                connection.free()
            }, CallbackContext.retained(self))
    }

    /// Whether the connection is still open.
    var isAlive: Bool { !state.isClosed && state.transport != nil }

    /// Whether the current exchange is not the connection's first.
    private var isReused: Bool { state.exchangesStarted > 1 }

    /// Closes the socket: on the loop thread, or after the loop stopped.
    func free() {
        state.connectTimer?.free()
        state.connectTimer = nil
        state.isClosed = true
        state.transport?.close()
        state.transport = nil
    }

    func start(_ exchange: Exchange) {
        pool.thread.check()
        guard exchange.handle(.assigned) == .send else { return pool.release(self, reusable: true) }
        state.current = exchange
        exchange.state.connection = self
        guard let transport = state.transport, !state.isClosed else {
            return carryOut(exchange.handle(.failed(.unreachable("connection closed"))), exchange)
        }
        let r = exchange.request
        state.parser = ResponseParser(maxBodyBytes: UpstreamClient.maxResponseBytes, bodyless: r.method == .HEAD)
        if !state.connected && state.connectTimer == nil { startConnectTimer(seconds: r.connectTimeoutSeconds) }
        state.exchangesStarted += 1
        switch transport.write(exchange.wire, unlessInputWaiting: isReused) {
        case .accepted:
            carryOut(exchange.handle(.sent(unsent: transport.unsent)), exchange)
        case .failed:
            carryOut(exchange.handle(.failed(.unreachable("cannot send the request"))), exchange)
        case .inputWaiting:
            // Bytes came between the hand-over and now: nothing was sent; the exchange waits
            // for another connection and this one closes.
            state.current = nil
            state.parser = nil
            exchange.state.connection = nil
            state.isClosed = true
            _ = exchange.handle(.returned)
            pool.putBack(exchange)
            pool.release(self, reusable: false)
        }
    }

    // MARK: A streamed body

    func transportDrained() {
        guard let exchange = state.current else { return }
        carryOut(exchange.handle(.sent(unsent: state.transport?.unsent ?? 0)), exchange)
    }

    /// Asks the body's producer for its next piece (its flow is the exchange's
    /// ``ExchangeState``); the piece comes back on this loop (the producer's promise).
    private func pullBody(_ exchange: Exchange) {
        guard let source = exchange.request.content.stream else { return }
        let pulled = LoopBound(BodyPull(connection: self, exchange: exchange), loop: pool.thread)
        source.next { piece in
            let pull = pulled.value
            guard let connection = pull.connection, connection.state.current === pull.exchange else { return }
            connection.carryOut(pull.exchange.handle(.bodyPiece(piece)), pull.exchange)
        }
    }

    private struct BodyPull {
        weak var connection: UpstreamConnection?
        let exchange: Exchange
    }

    private func sendBody(_ bytes: [UInt8], _ exchange: Exchange) {
        guard let transport = state.transport, transport.write(bytes, unlessInputWaiting: false) == .accepted else {
            return carryOut(exchange.handle(.failed(.unreachable("cannot send the request"))), exchange)
        }
        carryOut(exchange.handle(.sent(unsent: transport.unsent)), exchange)
    }

    /// Bytes that came before the current request was written whole, on a reused connection:
    /// possibly meant for an earlier caller, never given to this one.
    private func refuseEarlyBytes(_ exchange: Exchange) {
        carryOut(exchange.handle(.failed(.badResponse(Self.earlyBytes))), exchange)
    }

    static let earlyBytes = "the upstream sent bytes before the request was written"

    /// After `seconds`, a socket that is still not connected fails its exchange (504).
    private func startConnectTimer(seconds: Double) {
        state.connectTimer = LoopEvent.timer(
            pool.base,
            { _, _, arg in
                let connection: UpstreamConnection = CallbackContext.object(arg!)
                connection.connectTimedOut()
            }, CallbackContext.unretained(self))
        state.connectTimer?.schedule(after: seconds)
    }

    private func connectTimedOut() {
        state.connectTimer?.free()
        state.connectTimer = nil
        guard !state.connected, let exchange = state.current else { return }
        carryOut(exchange.handle(.connectTimeout), exchange)
    }

    /// Ends `exchange` at its deadline.
    func abort(_ exchange: Exchange) {
        guard state.current === exchange else { return }
        carryOut(exchange.handle(.deadline), exchange)
    }

    // MARK: The transport's reports

    func transportConnected() {
        state.connected = true
        state.connectTimer?.free()
        state.connectTimer = nil
    }

    /// Bytes waiting on a reused connection arrived before the request's last write began:
    /// another request's answer, or none asked for; never this one's (502, 1401).
    func transportReceivedBeforeWrite() {
        guard isReused, let exchange = state.current else { return }
        refuseEarlyBytes(exchange)
    }

    func transportReceived(_ bytes: UnsafeRawBufferPointer, more: Bool) {
        if isReused, let exchange = state.current,
            state.transport?.isWriting == true || exchange.state.machine.isSendingBody
        {
            return refuseEarlyBytes(exchange)
        }
        // The parser is used in place, through `withValue` (through the state's key paths, it
        // was copied out and its fields projected at run time, on every read).
        let read = state.withValue { state -> (Exchange, Result<Int?, ResponseParser.Failure>)? in
            guard let exchange = state.current, state.parser != nil else { return nil }
            return (exchange, Result { () throws(ResponseParser.Failure) in try state.parser!.consume(bytes) })
        }
        // Nobody asked: an answer to nothing would be taken for the next exchange's.
        guard let (exchange, consumed) = read else { return closeWhileIdle() }
        let used: Int?
        switch consumed {
        case let .success(count): used = count
        case let .failure(error): return carryOut(exchange.handle(.failed(.badResponse(error.description))), exchange)
        }
        guard let used else { return }
        // Bytes past the answer's end: the peer and Cloak disagree on framing; not reused. Nor
        // when more may be waiting: the next exchange would take them for its answer (another
        // caller's, on a pooled connection). Nor while part of the request is still unsent (an
        // upstream that answered before reading a large body): the rest would go out ahead of
        // the next caller's request.
        answer(
            exchange,
            reusable: used == bytes.count && !more && !(state.transport?.isWriting ?? false)
                && !exchange.state.machine.isSendingBody)
    }

    func transportClosed(_ why: String?) {
        state.transport = nil
        state.isClosed = true
        guard let exchange = state.current, var parser = state.parser else { return closeWhileIdle() }
        do throws(ResponseParser.Failure) {
            // A reset, or TLS ended without close_notify, is no end of an answer read until the
            // close (a truncated body would pass as whole).
            if why != nil { throw .endedEarly }
            try parser.close()
            state.parser = parser
            answer(exchange, reusable: false)
        } catch {
            // No byte of an answer: the connection failed (a pooled one the peer had closed, a
            // refused connect, a TLS failure). Some: the answer was cut short.
            let reported: UpstreamError =
                parser.hasStarted
                ? .badResponse(error.description) : .unreachable(why ?? "connection closed before an answer")
            carryOut(exchange.handle(.failed(reported)), exchange)
        }
    }

    private func closeWhileIdle() {
        state.isClosed = true
        state.transport?.close()
        state.transport = nil
        pool.forget(self)
    }

    // MARK: Outcomes

    private func answer(_ exchange: Exchange, reusable: Bool) {
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
    private func carryOut(_ action: ExchangeState.Action, _ exchange: Exchange, answer: HTTPResponse? = nil) {
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

    private func finish(
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
