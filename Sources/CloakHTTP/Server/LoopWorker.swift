import Foundation
import Synchronization

/// One event-loop thread: its own event_base, SO_REUSEPORT listener and connections.
///
/// By concern: the loop and its cross-thread queue here; the listener in
/// `LoopWorker+Listener`, accepting and deadlines in `+Connections`, handing a request to the
/// handler in `+Dispatch`, draining in `+Drain` (over the pure ``DrainState``), CONNECT tunnels in
/// `+Tunnels`. Each connection is a ``ServerConnection``. libevent itself is called only through
/// `Internals/*+Calls.swift`.
///
/// `@unchecked Sendable` because the object is shared with its thread and with the thread that
/// asks it to stop. Everything mutable is in ``state``, a ``LoopBound`` that traps on an access
/// from any thread but the loop's while it runs; other threads only call ``requestStop()`` and
/// ``execute(_:)``, which go through `event_active`, the one libevent call that is safe across
/// threads. The events made at start are written only before the loop runs.
final class LoopWorker: @unchecked Sendable {
    let base: EventBase
    let configuration: HTTPServerConfiguration
    let handler: HTTPDeferredHandler
    let budget: ConnectionBudget
    let addressBudget: AddressBudget
    /// The thread the loop runs on, checked by ``state``.
    let thread = LoopThread()
    /// Every connection's limits and deadlines (nanoseconds), for its state machine.
    let connectionLimits: ServerConnectionState<LoopClock>.Limits

    /// What the loop changes as it serves.
    struct State {
        /// Open connections by their number (an answer finds its connection by number: a closed
        /// one is gone, and a later one never has the same number).
        var connections: [UInt64: ServerConnection] = [:]
        var connectionCounter: UInt64 = 0
        var drain = DrainState()
        var drainTimer: LoopEvent?
        var requestCounter: UInt64 = 0
        /// The `Date` header's text for the current second.
        var date = HTTPDate()
        /// This loop's upstream client, made on first use.
        var upstreamClient: UpstreamClient?
        var listener: Listener?
        var acceptPauseTimer: LoopEvent?
        /// State kept per loop for code above the server (``LoopHandle/local(for:make:)``).
        var locals: [ObjectIdentifier: LoopHandle.Local] = [:]
    }

    // Read on every request by one thread: without the runtime's access checks (about 80
    // instructions each); the loop-thread check is ``LoopBound``'s.
    @exclusivity(unchecked) var state: LoopBound<State>

    // Made in init, before the loop runs; read on the loop thread and freed in deinit.
    private var sweepTimer: LoopEvent?
    private var stopEvent: LoopEvent?
    private var wakeEvent: LoopEvent?

    /// Beaten by the sweep four times a second: a loop that stops turning stops beating
    /// (``LoopWatchdog``, `/readyz`).
    let heartbeat: LoopWatchdog.Heartbeat?
    /// Work from other threads (answers, upstream calls), waiting for the loop.
    private let tasks = Mutex<[@Sendable () -> Void]>([])
    /// The handle requests carry to come back to this loop (made at the end of init: read from
    /// any thread).
    private(set) var handle: LoopHandle!
    let idPrefix: String
    var port: Int = 0

    let tls: TLSServerContext?
    /// Set on a forward-proxy door: decides each CONNECT (see LoopWorker+Tunnels.swift).
    let tunnels: TunnelAuthorizer?
    /// The loop's one read buffer, lent to every connection's transport for each read.
    let readBuffer = ReadBuffer()
    /// Asked on each head with a body: how it is read and what the router found (nil: whole).
    let route: (@Sendable (HTTPMethod, String) -> HeadRoute)?

    init(
        configuration: HTTPServerConfiguration, handler: @escaping HTTPDeferredHandler, budget: ConnectionBudget,
        addressBudget: AddressBudget,
        index: Int, tls: TLSServerContext? = nil, tunnels: TunnelAuthorizer? = nil,
        heartbeat: LoopWatchdog.Heartbeat? = nil,
        route: (@Sendable (HTTPMethod, String) -> HeadRoute)? = nil
    ) throws(HTTPServerError) {
        precondition(Libevent.threadingReady, "evthread_use_pthreads failed")
        guard let base = EventBase.make() else { throw .init("event_base_new failed") }
        self.base = base
        self.state = LoopBound(State(), loop: thread)
        self.configuration = configuration
        self.handler = handler
        self.budget = budget
        self.addressBudget = addressBudget
        self.tls = tls
        self.tunnels = tunnels
        self.route = route
        self.heartbeat = heartbeat
        connectionLimits = .init(
            maxBodyBytes: configuration.maxBodyBytes,
            headerTimeout: UInt64(max(configuration.headerTimeoutSeconds, 0)) * 1_000_000_000,
            bodyTimeout: UInt64(max(configuration.bodyTimeoutSeconds, 0)) * 1_000_000_000,
            idleTimeout: UInt64(max(configuration.idleTimeoutSeconds, 0)) * 1_000_000_000)
        self.idPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-\(index)-"
        makeEvents()
        handle = LoopHandle(worker: self)
    }

    private func makeEvents() {
        let me = CallbackContext.unretained(self)
        wakeEvent = LoopEvent.user(
            base,
            { _, _, arg in
                let worker: LoopWorker = CallbackContext.object(arg!)
                worker.runTasks()
            }, me)
        stopEvent = LoopEvent.user(
            base,
            { _, _, arg in
                let worker: LoopWorker = CallbackContext.object(arg!)
                worker.beginDrain()
            }, me)
        sweepTimer = LoopEvent.repeating(
            base,
            { _, _, arg in
                let worker: LoopWorker = CallbackContext.object(arg!)
                worker.sweep()
            }, me)
        sweepTimer?.schedule(after: 0.25)
    }

    deinit {
        // The loop has stopped (or never ran): this thread tears down.
        state.value.listener?.free()
        state.value.listener = nil
        state.value.upstreamClient = nil
        // Closed without reporting back to this object (it is going away): their slots are given back here.
        for connection in state.value.connections.values {
            connection.closeWithoutReport()
            if let key = connection.addressKey { addressBudget.release(key) }
            budget.release()
        }
        state.value.connections.removeAll()
        stopEvent?.free()
        wakeEvent?.free()
        state.value.drainTimer?.free()
        sweepTimer?.free()
        state.value.acceptPauseTimer?.free()
        base.free()
    }

    /// Runs the loop until drained. Call on the worker's own thread.
    func run() {
        thread.enter()
        // `cloak-main-0`, `cloak-egress-1`: the loop's server and index, for top -H and /proc.
        Libevent.nameThread("cloak-" + (heartbeat?.name ?? "loop"))
        Libevent.requestShortSlice()
        heartbeat?.beat(now: Self.now())
        base.run()
        thread.leave()
    }

    /// Asks the loop to stop accepting and drain. Safe from any thread.
    func requestStop() { stopEvent?.activate() }

    /// Whether the caller runs on this loop's thread.
    var isOnLoop: Bool { thread.isCurrent }

    /// Runs `work` on this loop's thread: now when already there, else after waking the loop.
    func execute(_ work: @escaping @Sendable () -> Void) {
        if isOnLoop { return work() }
        tasks.withLock { $0.append(work) }
        wakeEvent?.activate()
    }

    private func runTasks() {
        let ready = tasks.withLock { pending -> [@Sendable () -> Void] in
            let out = pending
            pending.removeAll(keepingCapacity: true)
            return out
        }
        for work in ready { work() }
    }

    /// The loop's upstream client. Loop thread only.
    var upstream: UpstreamClient {
        precondition(isOnLoop, "the upstream client is used on its own loop thread only")
        if let client = state.value.upstreamClient { return client }
        let client = UpstreamClient(base: base, thread: thread, readBuffer: readBuffer)
        state.value.upstreamClient = client
        return client
    }

    /// Nanoseconds of the monotonic clock.
    static func now() -> UInt64 { LoopWatchdog.now() }
}
