import CLibevent
import COpenSSL
import Foundation

/// One evhttp client connection (and, for HTTPS, its own SSL: an HTTPS evhttp connection cannot
/// reconnect with a used one). Owned by its pool; one exchange at a time.
final class UpstreamConnection {
    private unowned let pool: UpstreamPool
    private var evcon: OpaquePointer?
    private var current: Exchange?
    private(set) var isClosed = false
    private var freeScheduled = false
    /// Set until the first exchange's TCP connect is checked.
    private var connectTimer: OpaquePointer?
    private var isNew = true

    init?(pool: UpstreamPool, address: String) {
        self.pool = pool
        var bev: OpaquePointer?
        if let tls = pool.tls {
            guard let ssl = tls.makeSSL(host: pool.host) else { return nil }
            guard let b = bufferevent_openssl_socket_new(
                pool.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue))
            else {
                SSL_free(ssl)
                return nil
            }
            bufferevent_openssl_set_allow_dirty_shutdown(b, 1)
            bev = b
        }
        guard let evcon = evhttp_connection_base_bufferevent_new(pool.base, nil, bev, address, UInt16(pool.port)) else {
            if let bev { bufferevent_free(bev) }
            return nil
        }
        self.evcon = evcon
        evhttp_connection_set_retries(evcon, 0)
        evhttp_connection_set_max_body_size(evcon, Int(UpstreamClient.maxResponseBytes))
        evhttp_connection_set_closecb(evcon, { _, arg in
            let connection: UpstreamConnection = CallbackContext.object(arg!)
            connection.didClose()
        }, CallbackContext.unretained(self))
    }

    /// Frees the evhttp connection on the next loop turn: never from inside one of its own callbacks.
    func scheduleFree() {
        guard !freeScheduled else { return }
        freeScheduled = true
        isClosed = true
        var now = timeval(tv_sec: 0, tv_usec: 0)
        _ = event_base_once(pool.base, -1, Int16(EV_TIMEOUT), { _, _, arg in
            let connection: UpstreamConnection = CallbackContext.release(arg!)
            connection.free()
        }, CallbackContext.retained(self), &now)
    }

    /// Whether the socket is still open (evhttp sets it to -1 when the connection resets).
    var isAlive: Bool {
        guard !isClosed, let evcon, let bev = evhttp_connection_get_bufferevent(evcon) else { return false }
        return bufferevent_getfd(bev) >= 0
    }

    /// Frees the evhttp connection: on the loop thread, or after the loop stopped (deinit).
    func free() {
        if let connectTimer { event_free(connectTimer) }
        connectTimer = nil
        guard let evcon else { return }
        self.evcon = nil
        evhttp_connection_set_closecb(evcon, nil, nil)
        evhttp_connection_free(evcon)
    }

    private func didClose() {
        // The peer closed the socket. An HTTPS connection cannot reconnect, and a plain one is not
        // worth the risk: drop it. A request in progress fails through its own callbacks.
        isClosed = true
        if current == nil { pool.forget(self) }
    }

    func start(_ exchange: Exchange) {
        pool.affinity.check()
        guard exchange.handle(.assigned) == .send else { return pool.release(self, reusable: true) }
        current = exchange
        exchange.connection = self
        guard let evcon else { return carryOut(exchange.handle(.failed(.unreachable("connection closed"))), exchange) }
        guard let req = evhttp_request_new({ req, arg in
            let exchange: Exchange = CallbackContext.object(arg!)
            exchange.releaseContext()
            UpstreamConnection.complete(exchange, req)
        }, exchange.retainContext()) else {
            exchange.releaseContext()
            return carryOut(exchange.handle(.failed(.unreachable("cannot create a request"))), exchange)
        }
        evhttp_request_set_error_cb(req, { error, arg in
            let exchange: Exchange = CallbackContext.object(arg!)
            exchange.lastError = error
        })
        let r = exchange.request
        // A header that could end the header block never reaches a pooled connection shared by
        // every caller (request smuggling): the exchange fails instead.
        guard r.headers.allSatisfy({ HTTPSyntax.isToken($0.name) && HTTPSyntax.isFieldValue($0.value) }) else {
            evhttp_request_free(req)
            exchange.releaseContext()
            return carryOut(exchange.handle(.failed(.unreachable("a header of the request is not a valid field"))), exchange)
        }
        let headers = evhttp_request_get_output_headers(req)
        let defaultPort = (r.scheme == .https && r.port == 443) || (r.scheme == .http && r.port == 80)
        // An IPv6 literal is bracketed (a byte search: `String.contains` is Foundation's, 4.6k instructions).
        let hostName = r.host.utf8.contains(UInt8(ascii: ":")) ? "[\(r.host)]" : r.host
        evhttp_add_header(headers, "Host", defaultPort ? hostName : "\(hostName):\(r.port)")
        for (name, value) in r.headers where !name.caseInsensitiveEquals("host") && !name.caseInsensitiveEquals("content-length") {
            evhttp_add_header(headers, name, value)
        }
        // Every body goes with its exact length. libevent 2.1 adds Content-Length only for POST
        // and PUT but writes the body for any method: a GET body without it would be read by the
        // upstream as the next request on this pooled connection (request smuggling).
        if !r.body.isEmpty, let out = evhttp_request_get_output_buffer(req) {
            evhttp_add_header(headers, "Content-Length", String(r.body.count))
            _ = r.body.withUnsafeBytes { evbuffer_add(out, $0.baseAddress, $0.count) }
        }
        exchange.evRequest = req
        if evhttp_make_request(evcon, req, Self.command(r.method), r.target) != 0 {
            // evhttp frees the request on failure without calling back.
            exchange.evRequest = nil
            exchange.releaseContext()
            return carryOut(exchange.handle(.failed(.unreachable("cannot send the request"))), exchange)
        }
        if let bev = evhttp_connection_get_bufferevent(evcon) {
            let fd = bufferevent_getfd(bev)
            if fd >= 0 { Libevent.setNoDelay(fd) }
        }
        if isNew {
            isNew = false
            startConnectTimer(seconds: r.connectTimeoutSeconds)
        }
    }

    /// After `seconds`, a socket that is still not connected fails its exchange (504).
    private func startConnectTimer(seconds: Double) {
        connectTimer = CLibevent_timer_new(pool.base, { _, _, arg in
            let connection: UpstreamConnection = CallbackContext.object(arg!)
            connection.checkConnected()
        }, CallbackContext.unretained(self))
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - floor(seconds)) * 1_000_000))
        if let connectTimer { event_add(connectTimer, &tv) }
    }

    private func checkConnected() {
        if let connectTimer { event_free(connectTimer) }
        connectTimer = nil
        guard let evcon, let bev = evhttp_connection_get_bufferevent(evcon), let exchange = current, !exchange.isDone
        else { return }
        let fd = bufferevent_getfd(bev)
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connected = fd >= 0 && withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard !connected else { return }
        carryOut(exchange.handle(.connectTimeout), exchange)
    }

    /// Ends `exchange` at its deadline.
    func abort(_ exchange: Exchange) {
        guard current === exchange else { return }
        carryOut(exchange.handle(.deadline), exchange)
    }

    /// Does what the exchange's state machine decided.
    private func carryOut(_ action: ExchangeState.Action, _ exchange: Exchange, answer: HTTPResponse? = nil) {
        switch action {
        case .none, .send:
            return
        case let .deliverAnswer(reuse):
            finish(exchange, answer.map { .success($0) } ?? .failure(.badResponse("no answer")), reusable: reuse, failed: false)
        case let .deliverFailure(error, _):
            var unreachable = false
            if case .unreachable = error { unreachable = true }
            finish(exchange, .failure(error), reusable: false, failed: unreachable)
        case .cancelAndTimeOut:
            // libevent 2.1 frees a cancelled request and calls only its error callback, never its
            // completion: the retained context is given back here.
            if let req = exchange.evRequest {
                exchange.evRequest = nil
                evhttp_cancel_request(req)
            }
            exchange.releaseContext()
            finish(exchange, .failure(.timeout), reusable: false, failed: false)
        }
    }

    private func finish(_ exchange: Exchange, _ result: Result<HTTPResponse, UpstreamError>, reusable: Bool, failed: Bool) {
        current = nil
        exchange.connection = nil
        exchange.deliver(result)
        pool.release(self, reusable: reusable, failed: failed)
    }

    private static func complete(_ exchange: Exchange, _ req: OpaquePointer?) {
        exchange.evRequest = nil
        guard let connection = exchange.connection else {
            // The connection let go of it already (freed with the request outstanding): still
            // answer the caller exactly once.
            if case let .deliverFailure(error, _) = exchange.handle(.failed(map(exchange.lastError))) {
                exchange.deliver(.failure(error))
            }
            return
        }
        guard let req, evhttp_request_get_response_code(req) > 0 else {
            return connection.carryOut(exchange.handle(.failed(map(exchange.lastError))), exchange)
        }
        let status = Int(evhttp_request_get_response_code(req))
        let raw = Libevent.headers(evhttp_request_get_input_headers(req))
        // Reuse the connection only after a framed answer the peer did not end with a close.
        // Names compared in place; only the few values that matter are lowercased.
        let framed = raw.contains {
            $0.name.caseInsensitiveEquals("content-length")
                || ($0.name.caseInsensitiveEquals("transfer-encoding") && $0.value.lowercased().contains("chunked"))
        } && !raw.contains { $0.name.caseInsensitiveEquals("connection") && $0.value.lowercased().contains("close") }
        let headers = withoutHopByHop(raw).filter {
            !$0.name.caseInsensitiveEquals("content-length") && !$0.name.caseInsensitiveEquals("x-request-id")  // Cloak sets its own
        }
        var body: [UInt8] = []
        if let input = evhttp_request_get_input_buffer(req) {
            let length = evbuffer_get_length(input)
            body = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
                count = length > 0 ? Int(evbuffer_remove(input, buffer.baseAddress, length)) : 0
            }
        }
        connection.carryOut(exchange.handle(.answered(reusable: framed)), exchange,
                            answer: HTTPResponse(status: status, headers: headers, body: body))
    }

    static func map(_ error: evhttp_request_error?) -> UpstreamError {
        switch error {
        case EVREQ_HTTP_TIMEOUT?: return .timeout
        case EVREQ_HTTP_INVALID_HEADER?, EVREQ_HTTP_DATA_TOO_LONG?: return .badResponse("malformed or oversized answer")
        case EVREQ_HTTP_EOF?: return .unreachable("connection closed before an answer")
        case EVREQ_HTTP_BUFFER_ERROR?: return .unreachable("connection failed (refused, reset or TLS)")
        default: return .unreachable("connection failed")
        }
    }

    static func command(_ method: HTTPMethod) -> evhttp_cmd_type {
        switch method {
        case .GET: return EVHTTP_REQ_GET
        case .POST: return EVHTTP_REQ_POST
        case .HEAD: return EVHTTP_REQ_HEAD
        case .PUT: return EVHTTP_REQ_PUT
        case .DELETE: return EVHTTP_REQ_DELETE
        case .OPTIONS: return EVHTTP_REQ_OPTIONS
        case .TRACE: return EVHTTP_REQ_TRACE
        case .CONNECT: return EVHTTP_REQ_CONNECT
        case .PATCH: return EVHTTP_REQ_PATCH
        }
    }
}
