import CLibevent
import COpenSSL
import Foundation

/// One evhttp client connection (and, for HTTPS, its own SSL: an HTTPS evhttp connection cannot
/// reconnect with a used one). Owned by its pool; one exchange at a time.
final class UpstreamConnection {
    private unowned let pool: UpstreamPool
    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var evcon: EvConnection?
        var current: Exchange?
        var isClosed: Bool = false
        var freeScheduled: Bool = false
        /// Set until the first exchange's TCP connect is checked.
        var connectTimer: LoopEvent?
        var isNew: Bool = true
        /// The socket TCP_NODELAY was set on: once per socket, not per request (a system call each).
        var noDelaySocket: Int32 = -1
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init?(pool: UpstreamPool, address: String) {
        self.state = LoopBound(State(), loop: pool.thread)
        self.pool = pool
        var bev: Bufferevent?
        if let tls = pool.tls {
            guard let ssl = tls.makeSSL(host: pool.host) else { return nil }
            guard let b = Bufferevent.connectingTLS(pool.base, ssl) else {
                SSL_free(ssl)
                return nil
            }
            bev = b
        }
        guard
            let evcon = EvConnection.upstream(
                pool.base, over: bev, address: address, port: pool.port,
                maxBodyBytes: Int(UpstreamClient.maxResponseBytes))
        else {
            bev?.free()
            return nil
        }
        self.state.evcon = evcon
        evcon.onClose(
            { _, arg in
                let connection: UpstreamConnection = CallbackContext.object(arg!)
                connection.didClose()
            }, CallbackContext.unretained(self))
    }

    /// Frees the evhttp connection on the next loop turn: never from inside one of its own callbacks.
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

    /// Whether the socket is still open (evhttp sets it to -1 when the connection resets).
    var isAlive: Bool {
        guard !state.isClosed, let bev = state.evcon?.bufferevent else { return false }
        return bev.fd >= 0
    }

    /// Frees the evhttp connection: on the loop thread, or after the loop stopped (deinit).
    func free() {
        state.connectTimer?.free()
        state.connectTimer = nil
        guard let evcon = state.evcon else { return }
        state.evcon = nil
        evcon.onClose(nil, nil)
        evcon.free()
    }

    private func didClose() {
        // The peer closed the socket. An HTTPS connection cannot reconnect, and a plain one is not
        // worth the risk: drop it. A request in progress fails through its own callbacks.
        state.isClosed = true
        state.noDelaySocket = -1  // a number the kernel may give the next socket
        if state.current == nil { pool.forget(self) }
    }

    func start(_ exchange: Exchange) {
        pool.thread.check()
        guard exchange.handle(.assigned) == .send else { return pool.release(self, reusable: true) }
        state.current = exchange
        exchange.state.connection = self
        guard let evcon = state.evcon else {
            return carryOut(exchange.handle(.failed(.unreachable("connection closed"))), exchange)
        }
        guard let req = EvRequest.upstream(for: exchange) else {
            return carryOut(exchange.handle(.failed(.unreachable("cannot create a request"))), exchange)
        }
        let r = exchange.request
        // A header that could end the header block never reaches a pooled connection shared by
        // every caller (request smuggling): the exchange fails instead.
        guard r.headers.allSatisfy({ HTTPSyntax.isToken($0.name) && HTTPSyntax.isFieldValue($0.value) }) else {
            req.free()
            exchange.releaseContext()
            return carryOut(
                exchange.handle(.failed(.unreachable("a header of the request is not a valid field"))), exchange)
        }
        guard let headers = req.outputHeaders else {
            req.free()
            exchange.releaseContext()
            return carryOut(exchange.handle(.failed(.unreachable("cannot create a request"))), exchange)
        }
        let defaultPort = (r.scheme == .https && r.port == 443) || (r.scheme == .http && r.port == 80)
        // An IPv6 literal is bracketed (a byte search: `String.contains` is Foundation's, 4.6k instructions).
        let hostName = r.host.utf8.contains(UInt8(ascii: ":")) ? "[\(r.host)]" : r.host
        headers.add("Host", defaultPort ? hostName : "\(hostName):\(r.port)")
        for (name, value) in r.headers
        where !name.caseInsensitiveEquals("host") && !name.caseInsensitiveEquals("content-length") {
            headers.add(name, value)
        }
        // Every body goes with its exact length. libevent 2.1 adds Content-Length only for POST
        // and PUT but writes the body for any method: a GET body without it would be read by the
        // upstream as the next request on this pooled connection (request smuggling).
        if !r.body.isEmpty, let out = req.outputBody {
            headers.add("Content-Length", String(r.body.count))
            out.append(r.body)
        }
        exchange.state.evRequest = req
        if !evcon.send(req, r.method, target: r.target) {
            // evhttp frees the request on failure without calling back.
            exchange.state.evRequest = nil
            exchange.releaseContext()
            return carryOut(exchange.handle(.failed(.unreachable("cannot send the request"))), exchange)
        }
        // evhttp opens the socket in `send` (and again should it reconnect): a new one gets it.
        if let fd = evcon.bufferevent?.fd, fd >= 0, fd != state.noDelaySocket {
            Sockets.setNoDelay(fd)
            state.noDelaySocket = fd
        }
        if state.isNew {
            state.isNew = false
            startConnectTimer(seconds: r.connectTimeoutSeconds)
        }
    }

    /// After `seconds`, a socket that is still not connected fails its exchange (504).
    private func startConnectTimer(seconds: Double) {
        state.connectTimer = LoopEvent.timer(
            pool.base,
            { _, _, arg in
                let connection: UpstreamConnection = CallbackContext.object(arg!)
                connection.checkConnected()
            }, CallbackContext.unretained(self))
        state.connectTimer?.schedule(after: seconds)
    }

    private func checkConnected() {
        state.connectTimer?.free()
        state.connectTimer = nil
        guard let bev = state.evcon?.bufferevent, let exchange = state.current, !exchange.isDone else { return }
        let fd = bev.fd
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connected =
            fd >= 0
            && withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
            }
        guard !connected else { return }
        carryOut(exchange.handle(.connectTimeout), exchange)
    }

    /// Ends `exchange` at its deadline.
    func abort(_ exchange: Exchange) {
        guard state.current === exchange else { return }
        carryOut(exchange.handle(.deadline), exchange)
    }

    /// Does what the exchange's state machine decided.
    private func carryOut(_ action: ExchangeState.Action, _ exchange: Exchange, answer: HTTPResponse? = nil) {
        switch action {
        case .none, .send:
            return
        case let .deliverAnswer(reuse):
            finish(
                exchange, answer.map { .success($0) } ?? .failure(.badResponse("no answer")), reusable: reuse,
                failed: false)
        case let .deliverFailure(error, _):
            var unreachable = false
            if case .unreachable = error { unreachable = true }
            finish(exchange, .failure(error), reusable: false, failed: unreachable)
        case .cancelAndTimeOut:
            // libevent 2.1 frees a cancelled request and calls only its error callback, never its
            // completion: the retained context is given back here.
            if let req = exchange.state.evRequest {
                exchange.state.evRequest = nil
                req.cancel()
            }
            exchange.releaseContext()
            finish(exchange, .failure(.timeout), reusable: false, failed: false)
        }
    }

    private func finish(
        _ exchange: Exchange, _ result: Result<HTTPResponse, UpstreamError>, reusable: Bool, failed: Bool
    ) {
        state.current = nil
        exchange.state.connection = nil
        if !reusable { state.noDelaySocket = -1 }  // evhttp may close it without the close callback
        exchange.deliver(result)
        pool.release(self, reusable: reusable, failed: failed)
    }

    static func complete(_ exchange: Exchange, _ req: EvRequest?) {
        exchange.state.evRequest = nil
        guard let connection = exchange.state.connection else {
            // The connection let go of it already (freed with the request outstanding): still
            // answer the caller exactly once.
            if case let .deliverFailure(error, _) = exchange.handle(
                .failed(exchange.state.lastError ?? .unreachable("connection failed")))
            {
                exchange.deliver(.failure(error))
            }
            return
        }
        guard let req, req.responseCode > 0 else {
            return connection.carryOut(
                exchange.handle(.failed(exchange.state.lastError ?? .unreachable("connection failed"))), exchange)
        }
        let status = req.responseCode
        let raw = req.inputHeaders?.all ?? []
        // Reuse the connection only after a framed answer the peer did not end with a close.
        // Names compared in place; only the few values that matter are lowercased.
        let framed =
            raw.contains {
                $0.name.caseInsensitiveEquals("content-length")
                    || ($0.name.caseInsensitiveEquals("transfer-encoding") && $0.value.lowercased().contains("chunked"))
            }
            && !raw.contains { $0.name.caseInsensitiveEquals("connection") && $0.value.lowercased().contains("close") }
        let headers = withoutHopByHop(raw).filter {
            // Cloak sets its own
            !$0.name.caseInsensitiveEquals("content-length") && !$0.name.caseInsensitiveEquals("x-request-id")
        }
        let body = req.inputBody?.removeAll() ?? []
        connection.carryOut(
            exchange.handle(.answered(reusable: framed)), exchange,
            answer: HTTPResponse(status: status, headers: headers, body: body))
    }
}
