import Foundation

/// The connections to one upstream (scheme, host, port, trust, address policy) on one loop.
final class UpstreamPool {
    let base: EventBase
    let dns: DNSResolver?
    let key: UpstreamClient.PoolKey
    let tls: TLSClientContext?
    /// The loop's read buffer, lent to every connection's stream for each read.
    let readBuffer: ReadBuffer
    /// The loop this pool belongs to: every entry point checks it.
    let thread: LoopThread
    /// The resolved numeric address, once known; looked up again after `addressTTL` seconds or
    /// after a connection to it fails (an upstream that moved is found again).
    private var address: String? {
        get { state.value.address }
        set {
            state.value.address = newValue
            state.addressRefused = newValue.map(refuses) ?? false
        }
    }
    private static let addressTTL: TimeInterval = 60
    private let isNumericHost: Bool

    var host: String { key.host }
    var port: Int { key.port }

    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var address: String?
        var idle = IdleConnections<UpstreamConnection>()
        var active: [ObjectIdentifier: UpstreamConnection] = [:]
        var waiting: [Exchange] = []
        /// Whether `address` is one the pool's policy refuses: decided once per address, not per exchange.
        var addressRefused: Bool = false
        var resolvedAt: Date = Date.distantPast
        var resolving: Bool = false
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init(
        base: EventBase, dns: DNSResolver?, key: UpstreamClient.PoolKey, tls: TLSClientContext?, thread: LoopThread,
        readBuffer: ReadBuffer
    ) {
        self.base = base
        self.readBuffer = readBuffer
        self.dns = dns
        self.key = key
        self.tls = tls
        self.thread = thread
        self.state = LoopBound(State(), loop: thread)
        isNumericHost = AddressPolicy.isLiteral(key.host)
        if isNumericHost {
            address = key.host
        }
    }

    /// Whether the pool's policy refuses connecting to `address` (private or loopback).
    private func refuses(_ address: String) -> Bool { !key.allowPrivate && AddressPolicy.isPrivate(address) }

    func closeAll() {
        for c in state.idle.removeAll() { c.free() }
    }

    func submit(_ exchange: Exchange) {
        thread.check()
        startDeadline(exchange)
        state.waiting.append(exchange)
        pump()
    }

    /// Seconds on a monotonic clock (the wall clock can jump), for idle connections.
    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Starts waiting exchanges on idle or new connections.
    private func pump() {
        if !isNumericHost, address != nil, Date().timeIntervalSince(state.resolvedAt) > Self.addressTTL {
            address = nil
        }
        guard let address else { return resolve() }
        if state.addressRefused {
            // A name that resolves to loopback or a private range (DNS rebinding included).
            self.address = nil
            return failWaiting("the upstream resolves to a private or loopback address (allow_private is off)")
        }
        while let exchange = state.waiting.first {
            if exchange.isDone {  // timed out while waiting
                state.waiting.removeFirst()
                continue
            }
            let connection: UpstreamConnection
            let (idle, expired) = state.idle.take(now: Self.now(), caller: exchange.request.caller)
            for old in expired { old.scheduleFree() }
            if let reused = idle {
                // The peer may have closed it since (an HTTP/1.0 answer, an idle timeout). Bytes
                // it sent nobody asked for are looked for by the transport as the request is
                // written, in this same call (one look, not two system calls per exchange).
                guard reused.isAlive else {
                    reused.scheduleFree()
                    continue
                }
                connection = reused
            } else if state.active.count < UpstreamClient.maxConnectionsPerUpstream {
                // Idle connections are other callers' (never this one's to reuse): past the
                // bound the one idle longest is closed, so the pool keeps its size.
                if state.active.count + state.idle.count >= UpstreamClient.maxConnectionsPerUpstream,
                    let other = state.idle.removeOldest()
                {
                    other.scheduleFree()
                }
                guard let opened = UpstreamConnection(pool: self, address: address) else {
                    state.waiting.removeFirst()
                    fail(exchange, "cannot open a connection")
                    continue
                }
                opened.state.caller = exchange.request.caller
                connection = opened
            } else {
                return  // every connection is busy: wait for one
            }
            state.waiting.removeFirst()
            state.active[ObjectIdentifier(connection)] = connection
            connection.start(exchange)
        }
    }

    /// A connection finished its exchange: keep it for the next one unless it cannot be reused.
    func release(_ connection: UpstreamConnection, reusable: Bool, failed: Bool = false) {
        state.active[ObjectIdentifier(connection)] = nil
        if failed && !isNumericHost { address = nil }  // resolve again before the next connection
        if reusable && key.reuse && !connection.state.isClosed {
            state.idle.put(connection, caller: connection.state.caller, now: Self.now())
        } else {
            connection.scheduleFree()
        }
        pump()
    }

    /// An exchange whose connection proved unusable before its request was written: first in
    /// line again (its deadline runs on).
    func putBack(_ exchange: Exchange) {
        state.waiting.insert(exchange, at: 0)
    }

    /// An idle connection was closed by the peer.
    func forget(_ connection: UpstreamConnection) {
        state.idle.remove { $0 === connection }
        connection.scheduleFree()
    }

    private func startDeadline(_ exchange: Exchange) {
        // The exchange outlives its timer: the queue or its connection holds it until it
        // finishes, and delivering frees the timer.
        let timer = LoopEvent.timer(
            base,
            { _, _, arg in
                let exchange: Exchange = CallbackContext.object(arg!)
                if let connection = exchange.state.connection {
                    connection.abort(exchange)
                } else if case let .deliverFailure(error, _) = exchange.handle(.deadline) {
                    exchange.deliver(.failure(error))  // still waiting for a connection
                }
            }, CallbackContext.unretained(exchange))
        timer?.schedule(after: max(exchange.request.timeoutSeconds, 0.001))
        // Through `withValue`: a field of the state through its key path was projected at run
        // time here (the completion's type is generic over Result), on every exchange.
        exchange.state.withValue { $0.timer = timer }
    }

    private func resolve() {
        guard !state.resolving else { return }
        guard let dns else { return failWaiting("no DNS resolver") }
        state.resolving = true
        dns.resolve(host, CallbackContext.retained(self)) { address, arg in
            let pool: UpstreamPool = CallbackContext.release(arg!)
            pool.state.resolving = false
            guard let address else {
                pool.failWaiting("cannot resolve the upstream host")
                return
            }
            pool.address = String(cString: address)
            pool.state.resolvedAt = Date()
            pool.pump()
        }
    }

    private func fail(_ exchange: Exchange, _ why: String) {
        if case let .deliverFailure(error, _) = exchange.handle(.failed(.unreachable(why))) {
            exchange.deliver(.failure(error))
        }
    }

    private func failWaiting(_ why: String) {
        let failed = state.waiting
        state.waiting.removeAll()
        for e in failed { fail(e, why) }
    }
}
