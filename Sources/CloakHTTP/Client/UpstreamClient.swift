import CLibevent
import COpenSSL
import Foundation

/// The vault-proxy client of one event loop: evhttp client connections to upstreams, pooled per
/// upstream, never blocking the loop.
///
/// - DNS is asynchronous (one `evdns_base` per loop); connections go to the numeric address with
///   the name in `Host`, SNI and hostname verification.
/// - evhttp runs one request at a time per connection, so each upstream has a pool; a request
///   takes an idle connection or opens one (up to ``maxConnectionsPerUpstream``; past that it waits).
/// - TCP_NODELAY is set on every upstream socket (without it HTTPS waits ~40 ms for delayed ACKs).
/// - Each request has one deadline covering connect and answer.
///
/// Loop thread only: every method runs on the loop that owns `base`.
final class UpstreamClient {
    static let maxConnectionsPerUpstream = 64
    static let maxResponseBytes = 8 << 20

    private let base: OpaquePointer
    private let dns: OpaquePointer?
    private var pools: [String: Pool] = [:]
    private var tls: [String: TLSClientContext] = [:]

    init(base: OpaquePointer) {
        self.base = base
        self.dns = evdns_base_new(base, Int32(EVDNS_BASE_INITIALIZE_NAMESERVERS))
    }

    deinit {
        for pool in pools.values { pool.closeAll() }
        if let dns { evdns_base_free(dns, 0) }
    }

    /// Sends `request`; `completion` runs once, on the loop thread.
    func send(_ request: UpstreamRequest, completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void) {
        let key = "\(request.scheme.rawValue)://\(request.host):\(request.port)|\(request.caFile ?? "")"
        let pool: Pool
        if let existing = pools[key] {
            pool = existing
        } else {
            var context: TLSClientContext?
            if request.scheme == .https {
                let tlsKey = request.caFile ?? ""
                if let c = tls[tlsKey] {
                    context = c
                } else {
                    do { context = try TLSClientContext(caFile: request.caFile) } catch { return completion(.failure(error)) }
                    tls[tlsKey] = context
                }
            }
            pool = Pool(base: base, dns: dns, scheme: request.scheme, host: request.host, port: request.port, tls: context)
            pools[key] = pool
        }
        pool.submit(Exchange(request: request, completion: completion))
    }
}

/// One request in flight: its deadline and its completion.
final class Exchange {
    let request: UpstreamRequest
    private var completion: ((Result<HTTPResponse, UpstreamError>) -> Void)?
    var lastError: evhttp_request_error?
    var timedOut = false
    var timer: OpaquePointer?
    /// The evhttp request while it is on a connection.
    var evRequest: OpaquePointer?
    weak var connection: Connection?
    /// Whether the retain handed to evhttp with the request has been given back.
    private var contextReleased = false

    /// Gives back the retain taken for the evhttp request's context (once).
    func releaseContext() {
        guard !contextReleased else { return }
        contextReleased = true
        Unmanaged.passUnretained(self).release()
    }

    init(request: UpstreamRequest, completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    var isDone: Bool { completion == nil }

    func finish(_ result: Result<HTTPResponse, UpstreamError>) {
        if let timer {
            event_free(timer)
            self.timer = nil
        }
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }
}

/// The connections to one upstream (scheme, host, port, trust) on one loop.
final class Pool {
    let base: OpaquePointer
    let dns: OpaquePointer?
    let scheme: UpstreamRequest.Scheme
    let host: String
    let port: Int
    let tls: TLSClientContext?
    private var idle: [Connection] = []
    private var active: [ObjectIdentifier: Connection] = [:]
    private var waiting: [Exchange] = []
    /// The resolved numeric address, once known; looked up again after `addressTTL` seconds or
    /// after a connection to it fails (an upstream that moved is found again).
    private var address: String?
    private var resolvedAt = Date.distantPast
    private static let addressTTL: TimeInterval = 60
    private var resolving = false
    private var isNumericHost: Bool { TLSClientContext.isNumeric(host) }

    init(base: OpaquePointer, dns: OpaquePointer?, scheme: UpstreamRequest.Scheme, host: String, port: Int,
         tls: TLSClientContext?) {
        self.base = base
        self.dns = dns
        self.scheme = scheme
        self.host = host
        self.port = port
        self.tls = tls
        if TLSClientContext.isNumeric(host) { address = host }
    }

    func closeAll() {
        for c in idle { c.free() }
        idle.removeAll()
    }

    func submit(_ exchange: Exchange) {
        startDeadline(exchange)
        waiting.append(exchange)
        pump()
    }

    /// Starts waiting exchanges on idle or new connections.
    private func pump() {
        if !isNumericHost, address != nil, Date().timeIntervalSince(resolvedAt) > Self.addressTTL { address = nil }
        guard let address else { return resolve() }
        while let exchange = waiting.first {
            if exchange.isDone {  // timed out while waiting
                waiting.removeFirst()
                continue
            }
            let connection: Connection
            if let reused = idle.popLast() {
                // The peer may have closed it since (an HTTP/1.0 answer, an idle timeout).
                guard reused.isAlive else {
                    reused.scheduleFree()
                    continue
                }
                connection = reused
            } else if active.count < UpstreamClient.maxConnectionsPerUpstream {
                guard let opened = Connection(pool: self, address: address) else {
                    waiting.removeFirst()
                    exchange.finish(.failure(.unreachable("cannot open a connection")))
                    continue
                }
                connection = opened
            } else {
                return  // every connection is busy: wait for one
            }
            waiting.removeFirst()
            active[ObjectIdentifier(connection)] = connection
            connection.start(exchange)
        }
    }

    /// A connection finished its exchange: keep it for the next one unless it cannot be reused.
    func release(_ connection: Connection, reusable: Bool, failed: Bool = false) {
        active[ObjectIdentifier(connection)] = nil
        if failed && !isNumericHost { address = nil }  // resolve again before the next connection
        if reusable && !connection.isClosed { idle.append(connection) } else { connection.scheduleFree() }
        pump()
    }

    /// An idle connection was closed by the peer.
    func forget(_ connection: Connection) {
        idle.removeAll { $0 === connection }
        connection.scheduleFree()
    }

    private func startDeadline(_ exchange: Exchange) {
        // The exchange outlives its timer: the queue or its evhttp request holds it until it finishes,
        // and finishing frees the timer.
        exchange.timer = CLibevent_timer_new(base, { _, _, arg in
            guard let arg else { return }
            let exchange = Unmanaged<Exchange>.fromOpaque(arg).takeUnretainedValue()
            if let connection = exchange.connection {
                connection.abort(exchange)
            } else {
                exchange.timedOut = true
                exchange.finish(.failure(.timeout))  // still waiting for a connection
            }
        }, Unmanaged.passUnretained(exchange).toOpaque())
        let seconds = max(exchange.request.timeoutSeconds, 0.001)
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - floor(seconds)) * 1_000_000))
        if let timer = exchange.timer { event_add(timer, &tv) }
    }

    private func resolve() {
        guard !resolving else { return }
        guard let dns else {
            failWaiting("no DNS resolver")
            return
        }
        resolving = true
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        _ = evdns_getaddrinfo(dns, host, nil, &hints, { result, info, arg in
            let pool = Unmanaged<Pool>.fromOpaque(arg!).takeRetainedValue()
            pool.resolving = false
            defer { if let info { evutil_freeaddrinfo(info) } }
            guard result == 0, let info, let address = Pool.numeric(info.pointee.ai_addr) else {
                pool.failWaiting("cannot resolve the upstream host")
                return
            }
            pool.address = address
            pool.resolvedAt = Date()
            pool.pump()
        }, Unmanaged.passRetained(self).toOpaque())
    }

    private func failWaiting(_ why: String) {
        let failed = waiting
        waiting.removeAll()
        for e in failed { e.finish(.failure(.unreachable(why))) }
    }

    static func numeric(_ sa: UnsafeMutablePointer<sockaddr>?) -> String? {
        guard let sa else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            return sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                var a = p.pointee.sin_addr
                return inet_ntop(AF_INET, &a, &buffer, 64).map { String(cString: $0) }
            }
        case AF_INET6:
            return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                var a = p.pointee.sin6_addr
                return inet_ntop(AF_INET6, &a, &buffer, 64).map { String(cString: $0) }
            }
        default: return nil
        }
    }
}

/// One evhttp client connection (and, for HTTPS, its own SSL). Owned by its pool.
final class Connection {
    private unowned let pool: Pool
    private var evcon: OpaquePointer?
    private var current: Exchange?
    private(set) var isClosed = false
    private var freeScheduled = false
    /// Set until the first exchange's TCP connect is checked.
    private var connectTimer: OpaquePointer?
    private var isNew = true

    init?(pool: Pool, address: String) {
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
            guard let arg else { return }
            Unmanaged<Connection>.fromOpaque(arg).takeUnretainedValue().didClose()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Frees the evhttp connection on the next loop turn: never from inside one of its own callbacks.
    func scheduleFree() {
        guard !freeScheduled else { return }
        freeScheduled = true
        isClosed = true
        var now = timeval(tv_sec: 0, tv_usec: 0)
        _ = event_base_once(pool.base, -1, Int16(EV_TIMEOUT), { _, _, arg in
            Unmanaged<Connection>.fromOpaque(arg!).takeRetainedValue().free()
        }, Unmanaged.passRetained(self).toOpaque(), &now)
    }

    /// Whether the socket is still open (evhttp sets it to -1 when the connection resets).
    var isAlive: Bool {
        guard !isClosed, let evcon, let bev = evhttp_connection_get_bufferevent(evcon) else { return false }
        return bufferevent_getfd(bev) >= 0
    }

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
        guard let evcon else { return done(exchange, .failure(.unreachable("connection closed")), reusable: false) }
        current = exchange
        exchange.connection = self
        let context = Unmanaged.passRetained(exchange).toOpaque()
        guard let req = evhttp_request_new({ req, arg in
            let exchange = Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue()
            exchange.releaseContext()
            Connection.complete(exchange, req)
        }, context) else {
            exchange.releaseContext()
            return done(exchange, .failure(.unreachable("cannot create a request")), reusable: false)
        }
        evhttp_request_set_error_cb(req, { error, arg in
            Unmanaged<Exchange>.fromOpaque(arg!).takeUnretainedValue().lastError = error
        })
        let r = exchange.request
        let headers = evhttp_request_get_output_headers(req)
        let defaultPort = (r.scheme == .https && r.port == 443) || (r.scheme == .http && r.port == 80)
        let hostName = r.host.contains(":") ? "[\(r.host)]" : r.host
        evhttp_add_header(headers, "Host", defaultPort ? hostName : "\(hostName):\(r.port)")
        for (name, value) in r.headers where !["host", "content-length"].contains(name.lowercased()) {
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
        if evhttp_make_request(evcon, req, Connection.command(r.method), r.target) != 0 {
            // evhttp frees the request on failure without calling back.
            exchange.evRequest = nil
            exchange.releaseContext()
            return done(exchange, .failure(.unreachable("cannot send the request")), reusable: false)
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
            let connection = Unmanaged<Connection>.fromOpaque(arg!).takeUnretainedValue()
            connection.checkConnected()
        }, Unmanaged.passUnretained(self).toOpaque())
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
        abort(exchange)
    }

    /// Ends `exchange` at its deadline. libevent 2.1 frees a cancelled request and calls only its
    /// error callback, never its completion: the exchange, its retained context and this
    /// connection are finished here.
    func abort(_ exchange: Exchange) {
        guard current === exchange, !exchange.isDone else { return }
        exchange.timedOut = true
        if let req = exchange.evRequest {
            exchange.evRequest = nil
            evhttp_cancel_request(req)
        }
        exchange.releaseContext()
        done(exchange, .failure(.timeout), reusable: false)
    }

    private static func complete(_ exchange: Exchange, _ req: OpaquePointer?) {
        exchange.evRequest = nil
        let result: Result<HTTPResponse, UpstreamError>
        var framed = false
        if exchange.timedOut {
            result = .failure(.timeout)
        } else if let req, evhttp_request_get_response_code(req) > 0 {
            let status = Int(evhttp_request_get_response_code(req))
            let raw = Libevent.headers(evhttp_request_get_input_headers(req))
            // Reuse the connection only after a framed answer the peer did not end with a close.
            let names = raw.map { ($0.name.lowercased(), $0.value.lowercased()) }
            framed = names.contains { $0.0 == "content-length" || ($0.0 == "transfer-encoding" && $0.1.contains("chunked")) }
                && !names.contains { $0.0 == "connection" && $0.1.contains("close") }
            let headers = withoutHopByHop(raw).filter {
                let name = $0.name.lowercased()
                return name != "content-length" && name != "x-request-id"  // Cloak sets its own
            }
            var body: [UInt8] = []
            if let input = evhttp_request_get_input_buffer(req) {
                let length = evbuffer_get_length(input)
                body = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
                    count = length > 0 ? Int(evbuffer_remove(input, buffer.baseAddress, length)) : 0
                }
            }
            result = .success(HTTPResponse(status: status, headers: headers, body: body))
        } else {
            result = .failure(Connection.map(exchange.lastError))
        }
        guard let connection = exchange.connection else { return exchange.finish(result) }
        connection.done(exchange, result, reusable: framed)
    }

    private func done(_ exchange: Exchange, _ result: Result<HTTPResponse, UpstreamError>, reusable: Bool) {
        current = nil
        exchange.connection = nil
        exchange.finish(result)
        var unreachable = false
        if case .failure(.unreachable) = result { unreachable = true }
        pool.release(self, reusable: reusable, failed: unreachable)
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
