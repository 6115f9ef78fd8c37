import Foundation

/// The connections to one upstream (scheme, host, port, trust, address policy) on one loop.
final class UpstreamPool {
    let base: EventBase
    let dns: DNSResolver?
    let key: UpstreamClient.PoolKey
    let tls: TLSClientContext?
    /// The loop this pool belongs to: every entry point checks it.
    let thread: LoopThread
    private var idle: [UpstreamConnection] {
        _read { yield state.value.idle }
        _modify { yield &state.value.idle }
    }
    private var active: [ObjectIdentifier: UpstreamConnection] {
        _read { yield state.value.active }
        _modify { yield &state.value.active }
    }
    private var waiting: [Exchange] {
        _read { yield state.value.waiting }
        _modify { yield &state.value.waiting }
    }
    /// The resolved numeric address, once known; looked up again after `addressTTL` seconds or
    /// after a connection to it fails (an upstream that moved is found again).
    private var address: String? {
        get { state.value.address }
        set {
            state.value.address = newValue
            addressRefused = newValue.map(refuses) ?? false
        }
    }
    /// Whether `address` is one the pool's policy refuses: decided once per address, not per exchange.
    private var addressRefused: Bool {
        _read { yield state.value.addressRefused }
        _modify { yield &state.value.addressRefused }
    }
    private var resolvedAt: Date {
        _read { yield state.value.resolvedAt }
        _modify { yield &state.value.resolvedAt }
    }
    private static let addressTTL: TimeInterval = 60
    private var resolving: Bool {
        _read { yield state.value.resolving }
        _modify { yield &state.value.resolving }
    }
    private let isNumericHost: Bool

    var host: String { key.host }
    var port: Int { key.port }

    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var address: String?
        var idle: [UpstreamConnection] = []
        var active: [ObjectIdentifier: UpstreamConnection] = [:]
        var waiting: [Exchange] = []
        var addressRefused: Bool = false
        var resolvedAt: Date = Date.distantPast
        var resolving: Bool = false
    }

    @exclusivity(unchecked) private var state: LoopBound<State>

    init(base: EventBase, dns: DNSResolver?, key: UpstreamClient.PoolKey, tls: TLSClientContext?, thread: LoopThread) {
        self.base = base
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
        for c in idle { c.free() }
        idle.removeAll()
    }

    func submit(_ exchange: Exchange) {
        thread.check()
        startDeadline(exchange)
        waiting.append(exchange)
        pump()
    }

    /// Starts waiting exchanges on idle or new connections.
    private func pump() {
        if !isNumericHost, address != nil, Date().timeIntervalSince(resolvedAt) > Self.addressTTL { address = nil }
        guard let address else { return resolve() }
        if addressRefused {
            // A name that resolves to loopback or a private range (DNS rebinding included).
            self.address = nil
            return failWaiting("the upstream resolves to a private or loopback address (allow_private is off)")
        }
        while let exchange = waiting.first {
            if exchange.isDone {  // timed out while waiting
                waiting.removeFirst()
                continue
            }
            let connection: UpstreamConnection
            if let reused = idle.popLast() {
                // The peer may have closed it since (an HTTP/1.0 answer, an idle timeout).
                guard reused.isAlive else {
                    reused.scheduleFree()
                    continue
                }
                connection = reused
            } else if active.count < UpstreamClient.maxConnectionsPerUpstream {
                guard let opened = UpstreamConnection(pool: self, address: address) else {
                    waiting.removeFirst()
                    fail(exchange, "cannot open a connection")
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
    func release(_ connection: UpstreamConnection, reusable: Bool, failed: Bool = false) {
        active[ObjectIdentifier(connection)] = nil
        if failed && !isNumericHost { address = nil }  // resolve again before the next connection
        if reusable && !connection.isClosed { idle.append(connection) } else { connection.scheduleFree() }
        pump()
    }

    /// An idle connection was closed by the peer.
    func forget(_ connection: UpstreamConnection) {
        idle.removeAll { $0 === connection }
        connection.scheduleFree()
    }

    private func startDeadline(_ exchange: Exchange) {
        // The exchange outlives its timer: the queue or its evhttp request holds it until it
        // finishes, and delivering frees the timer.
        exchange.timer = LoopEvent.timer(
            base,
            { _, _, arg in
                let exchange: Exchange = CallbackContext.object(arg!)
                if let connection = exchange.connection {
                    connection.abort(exchange)
                } else if case let .deliverFailure(error, _) = exchange.handle(.deadline) {
                    exchange.deliver(.failure(error))  // still waiting for a connection
                }
            }, CallbackContext.unretained(exchange))
        let seconds = max(exchange.request.timeoutSeconds, 0.001)
        exchange.timer?.schedule(after: seconds)
    }

    private func resolve() {
        guard !resolving else { return }
        guard let dns else { return failWaiting("no DNS resolver") }
        resolving = true
        dns.resolve(host, CallbackContext.retained(self)) { address, arg in
            let pool: UpstreamPool = CallbackContext.release(arg!)
            pool.resolving = false
            guard let address else {
                pool.failWaiting("cannot resolve the upstream host")
                return
            }
            pool.address = String(cString: address)
            pool.resolvedAt = Date()
            pool.pump()
        }
    }

    private func fail(_ exchange: Exchange, _ why: String) {
        if case let .deliverFailure(error, _) = exchange.handle(.failed(.unreachable(why))) {
            exchange.deliver(.failure(error))
        }
    }

    private func failWaiting(_ why: String) {
        let failed = waiting
        waiting.removeAll()
        for e in failed { fail(e, why) }
    }
}
