import Foundation
import Synchronization

/// One event-loop thread: its own event_base, evhttp and SO_REUSEPORT listener.
///
/// By concern: the loop and its cross-thread queue here; the listener in
/// `LoopWorker+Listener`, reading a request in `+Reading`, writing an answer in `+Writing`,
/// draining in `+Drain` (over the pure ``DrainState``), connections in `+Connections`, CONNECT
/// tunnels in `+Tunnels`. libevent itself is called only through `Internals/*+Calls.swift`.
///
/// `@unchecked Sendable` because the object is shared with its thread and with the thread that
/// asks it to stop. Everything mutable is in ``state``, a ``LoopBound`` that traps on an access
/// from any thread but the loop's while it runs; other threads only call ``requestStop()`` and
/// ``execute(_:)``, which go through `event_active`, the one libevent call that is safe across
/// threads. The events made at start are written only before the loop runs.
final class LoopWorker: @unchecked Sendable {
    let base: EventBase
    let http: EvHTTPServer
    let configuration: HTTPServerConfiguration
    let handler: HTTPDeferredHandler
    let budget: ConnectionBudget
    let addressBudget: AddressBudget
    /// The thread the loop runs on, checked by ``state``.
    let thread = LoopThread()

    /// What the loop changes as it serves.
    struct State {
        /// Open connections by evhttp connection, and those accepted whose evhttp connection is
        /// not known yet (for one turn of the loop).
        var connections: [OpaquePointer: ServerConnection] = [:]
        var accepted: [ServerConnection] = []
        /// Tunnel filters whose connection evhttp closed, waiting for the next loop turn to give
        /// back the loop's reference (see ``ConnectionFilter``).
        var filtersToRelease: [ConnectionFilter] = []
        /// Connections that end their sending side once their answer is sent.
        var filtersToShutDown: [ConnectionFilter] = []
        var drain = DrainState()
        var drainTimer: LoopEvent?
        var requestCounter: UInt64 = 0
        /// The `Date` header's text for the current second.
        var date = HTTPDate()
        /// This loop's upstream client, made on first use.
        var upstreamClient: UpstreamClient?
        var listener: Listener?
        /// The listener as evhttp serves it (what closes it).
        var bound: OpaquePointer?
        var acceptPauseTimer: LoopEvent?
        /// State kept per loop for code above the server (``LoopHandle/local(for:make:)``).
        var locals: [ObjectIdentifier: LoopHandle.Local] = [:]
    }

    // Read on every request by one thread: without the runtime's access checks (about 80
    // instructions each); the loop-thread check is ``LoopBound``'s.
    @exclusivity(unchecked) var state: LoopBound<State>

    // Made in init, before the loop runs; read on the loop thread and freed in deinit.
    private(set) var acceptedEvent: LoopEvent?
    private(set) var releaseTimer: LoopEvent?
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

    init(
        configuration: HTTPServerConfiguration, handler: @escaping HTTPDeferredHandler, budget: ConnectionBudget,
        addressBudget: AddressBudget,
        index: Int, tls: TLSServerContext? = nil, tunnels: TunnelAuthorizer? = nil,
        heartbeat: LoopWatchdog.Heartbeat? = nil
    ) throws(HTTPServerError) {
        precondition(Libevent.threadingReady, "evthread_use_pthreads failed")
        guard let base = EventBase.make() else { throw .init("event_base_new failed") }
        guard let http = EvHTTPServer.make(base) else {
            base.free()
            throw .init("evhttp_new failed")
        }
        self.base = base
        self.http = http
        self.state = LoopBound(State(), loop: thread)
        self.configuration = configuration
        self.handler = handler
        self.budget = budget
        self.addressBudget = addressBudget
        self.tls = tls
        self.tunnels = tunnels
        self.heartbeat = heartbeat
        self.idPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-\(index)-"
        makeEvents()
        handle = LoopHandle(worker: self)
    }

    private func makeEvents() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        configure(http)
        wakeEvent = LoopEvent.user(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().runTasks()
            }, me)
        stopEvent = LoopEvent.user(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().beginDrain()
            }, me)
        acceptedEvent = LoopEvent.user(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().adoptAccepted()
            }, me)
        releaseTimer = LoopEvent.timer(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().releaseClosedFilters()
            }, me)
        sweepTimer = LoopEvent.repeating(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().sweep()
            }, me)
        sweepTimer?.schedule(after: 0.25)
    }

    deinit {
        // The loop has stopped (or never ran): this thread tears down.
        forgetListener()  // a loop dropped before it ran (a bind retried on another port) is still listed
        state.value.upstreamClient = nil
        // evhttp_free closes the connections left (their close callbacks queue their filters);
        // no libevent callback is on the stack here, so their references go back at once.
        http.free()
        releaseClosedFilters()
        releaseTimer?.free()
        stopEvent?.free()
        wakeEvent?.free()
        state.value.drainTimer?.free()
        acceptedEvent?.free()
        sweepTimer?.free()
        state.value.acceptPauseTimer?.free()
        base.free()
    }

    /// Runs the loop until drained. Call on the worker's own thread.
    func run() {
        thread.enter()
        // `cloak-main-0`, `cloak-egress-1`: the loop's server and index, for top -H and /proc.
        Libevent.nameThread("cloak-" + (heartbeat?.name ?? "loop"))
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
        let client = UpstreamClient(base: base, thread: thread)
        state.value.upstreamClient = client
        return client
    }

    /// Nanoseconds of the monotonic clock.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
