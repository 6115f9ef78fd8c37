import CloakCore
import Foundation

/// One connection to an upstream: a ``SocketStream`` (plain or TLS), one exchange at a time, its answer
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
/// goes to another connection (``SocketStream/SendOutcome/inputWaiting``). Bytes that
/// arrive while part of the request is still unsent fail the exchange (502, 1401) and close
/// the connection, since the request has gone and cannot be sent elsewhere. What an upstream
/// sends after that look is, in HTTP/1.1, its answer as far as any client can tell (a thread
/// descheduled between the look and the write widens that moment): routes whose upstream must
/// never share a connection set `reuse: false` (docs/threat-model.md, "Upstream connections").
/// A look after the write cannot tell those bytes from a fast upstream's answer: tried, it
/// refused a fifth of the answers of an upstream on the same machine.
///
/// By concern: the connection and its stream's reports here; carrying out what the exchange's
/// machine decides (its streamed body, its answer or failure) in `+Actions`.
final class UpstreamConnection: SocketStreamOwner {
    unowned let pool: UpstreamPool
    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var transport: SocketStream?
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
        /// Whom it was opened for (``UpstreamRequest/caller``): the only caller it carries.
        var caller = ""
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init?(pool: UpstreamPool, address: String) {
        self.state = LoopBound(State(), loop: pool.thread)
        self.pool = pool
        var session: TLSSession?
        if let tls = pool.tls {
            guard let made = TLSSession(client: tls, host: pool.host) else { return nil }
            session = made
        }
        guard
            let transport = SocketStream.connect(
                to: address, port: pool.port, base: pool.base, buffer: pool.readBuffer, tls: session, owner: self)
        else { return nil }
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
        switch transport.send(exchange.wire, unlessInputWaiting: isReused) {
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

    func streamConnected() {
        state.connected = true
        state.connectTimer?.free()
        state.connectTimer = nil
    }

    /// Bytes waiting on a reused connection arrived before the request's last write began:
    /// another request's answer, or none asked for; never this one's (502, 1401).
    func streamReceivedBeforeWrite() {
        guard isReused, let exchange = state.current else { return }
        refuseEarlyBytes(exchange)
    }

    func streamReceived(_ bytes: UnsafeRawBufferPointer, more: Bool) {
        if isReused, let exchange = state.current,
            (state.transport?.unsent ?? 0) > 0 || exchange.state.machine.isSendingBody
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
            reusable: used == bytes.count && !more && (state.transport?.unsent ?? 0) == 0
                && !exchange.state.machine.isSendingBody)
    }

    func streamClosed(_ why: String?) {
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
}
