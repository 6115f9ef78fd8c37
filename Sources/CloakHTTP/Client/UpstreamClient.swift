import COpenSSL
import Foundation

/// The upstream client of one event loop: inbound routes, the egress doors and everything else
/// that calls out share it.
///
/// - ``UpstreamPool``: the connections to one upstream (scheme, host, port, trust, client
///   certificate, address policy). A connection runs one exchange at a time (no pipelining), so a
///   request takes an idle connection or opens one (up to ``maxConnectionsPerUpstream``; past that
///   it waits).
/// - ``UpstreamConnection``: one socket (``PlainTransport``, or ``TLSTransport`` with its own
///   SSL); the request written as one buffer, the answer read by ``ResponseParser``.
/// - ``Exchange``: one request, its deadline and completion; its states are ``ExchangeState``.
/// - DNS is asynchronous (one `evdns_base` per loop); connections go to the numeric address with
///   the name in `Host`, SNI and hostname verification. TCP_NODELAY on every socket.
///
/// Loop thread only: every method runs on the loop that owns `base` (checked).
final class UpstreamClient {
    static let maxConnectionsPerUpstream = 64
    static let maxResponseBytes = 8 << 20

    private let base: EventBase
    private let dns: DNSResolver?
    /// The loop this client belongs to: every entry point checks it.
    private let thread: LoopThread
    private var pools: [PoolKey: UpstreamPool] {
        _read { yield state.value.pools }
        _modify { yield &state.value.pools }
    }
    private var tls: [TLSKey: TLSClientContext] {
        _read { yield state.value.tls }
        _modify { yield &state.value.tls }
    }

    struct PoolKey: Hashable {
        let scheme: UpstreamRequest.Scheme
        let host: String
        let port: Int
        let tls: TLSKey
        let allowPrivate: Bool
        /// A pool whose connections carry one exchange each (a route's `reuse: false`).
        let reuse: Bool
    }

    struct TLSKey: Hashable {
        let caFile: String?
        let client: UpstreamRequest.ClientCertificate?
        /// The files' contents as last read (``UpstreamRequest/trustStamp``).
        let stamp: Int
    }

    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var pools: [PoolKey: UpstreamPool] = [:]
        /// The pool the last request went to: a route sends its requests to one upstream, and
        /// comparing its key (the same strings, so their storage first) is cheaper than hashing it.
        var lastPool: UpstreamPool?
        var tls: [TLSKey: TLSClientContext] = [:]
    }

    @exclusivity(unchecked) private var state: LoopBound<State>

    /// The loop's one read buffer, shared by every connection of every pool.
    private let readBuffer: ReadBuffer

    init(base: EventBase, thread: LoopThread, readBuffer: ReadBuffer = ReadBuffer()) {
        self.readBuffer = readBuffer
        self.state = LoopBound(State(), loop: thread)
        self.base = base
        self.thread = thread
        self.dns = DNSResolver.make(base)
    }

    deinit {
        for pool in pools.values { pool.closeAll() }
        dns?.free()
    }

    /// Sends `request`; `completion` runs once, on the loop thread.
    func send(_ request: UpstreamRequest, completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void) {
        thread.check()
        // The bytes are made here, before a pool is chosen: a request that cannot be sent takes
        // no connection, closes none and does not make the pool resolve its host again.
        guard let wire = MessageWriter.request(request) else {
            return completion(.failure(.invalidRequest("a header, the host or the target of the request is not valid")))
        }
        let tlsKey = TLSKey(caFile: request.caFile, client: request.clientCertificate, stamp: request.trustStamp)
        let key = PoolKey(
            scheme: request.scheme, host: request.host, port: request.port,
            tls: request.scheme == .https ? tlsKey : TLSKey(caFile: nil, client: nil, stamp: 0),
            allowPrivate: request.allowPrivate, reuse: request.reuseConnection)
        let pool: UpstreamPool
        // Through `withValue`: the `pools` accessor, called out of line, allocated its coroutine
        // frame on every request.
        if let last = state.withValue({ $0.lastPool }), last.key == key {
            pool = last
        } else if let existing = state.withValue({ $0.pools[key] }) {
            pool = existing
            state.withValue { $0.lastPool = existing }
        } else {
            var context: TLSClientContext?
            if request.scheme == .https {
                if let c = tls[tlsKey] {
                    context = c
                } else {
                    do {
                        context = try TLSClientContext(
                            caFile: request.caFile, clientCertificate: request.clientCertificate)
                    } catch { return completion(.failure(error)) }
                    tls[tlsKey] = context
                }
            }
            pool = UpstreamPool(base: base, dns: dns, key: key, tls: context, thread: thread, readBuffer: readBuffer)
            pools[key] = pool
            state.withValue { $0.lastPool = pool }
        }
        pool.submit(Exchange(request: request, wire: wire, thread: thread, completion: completion))
    }
}
