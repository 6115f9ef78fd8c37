import CLibevent
import Foundation
import Synchronization

/// One event-loop thread: its own event_base, evhttp and SO_REUSEPORT listener.
///
/// `@unchecked Sendable` because the object is shared with its thread and with the thread that
/// asks it to stop. Invariant: all mutable state and every evhttp call are touched only on the
/// loop thread once ``run()`` starts; other threads only call ``requestStop()``, which goes
/// through `event_active`, the one libevent call that is safe across threads.
///
/// The fields read on every request are `@exclusivity(unchecked)`: with one thread touching
/// them, the runtime's dynamic access checks (about 80 instructions each, several a request)
/// guard nothing.
final class LoopWorker: @unchecked Sendable {
    let base: OpaquePointer
    let http: OpaquePointer
    private var bound: OpaquePointer?
    let configuration: HTTPServerConfiguration
    private let handler: HTTPDeferredHandler
    let budget: ConnectionBudget
    let addressBudget: AddressBudget
    /// Open connections by evhttp connection, and those accepted whose evhttp connection is not
    /// known yet (for one turn of the loop).
    @exclusivity(unchecked) var connections: [OpaquePointer: ServerConnection] = [:]
    var accepted: [ServerConnection] = []
    var acceptedEvent: OpaquePointer?
    var sweepTimer: OpaquePointer?
    var listener: OpaquePointer?
    var acceptPauseTimer: OpaquePointer?
    /// Tunnel filters whose connection evhttp closed, waiting for the next loop turn to give back
    /// the loop's reference (see ``ConnectionFilter``), and the timer that does it.
    var filtersToRelease: [ConnectionFilter] = []
    var releaseTimer: OpaquePointer?
    /// Beaten by the sweep four times a second: a loop that stops turning stops beating
    /// (``LoopWatchdog``, `/readyz`).
    let heartbeat: LoopWatchdog.Heartbeat?
    @exclusivity(unchecked) private(set) var draining = false
    private var drainDeadline = Date.distantFuture
    private var stopEvent: OpaquePointer?
    private var drainTimer: OpaquePointer?
    @exclusivity(unchecked) private var requestCounter: UInt64 = 0
    /// Requests handed to the handler and not answered yet.
    @exclusivity(unchecked) private var inFlight = 0
    /// The `Date` header's text for the current second.
    @exclusivity(unchecked) private var date = HTTPDate()
    /// The loop thread, set when ``run()`` starts.
    @exclusivity(unchecked) private var loopThread: pthread_t?
    /// Work from other threads (answers, upstream calls), waiting for the loop.
    private let tasks = Mutex<[@Sendable () -> Void]>([])
    private var wakeEvent: OpaquePointer?
    /// The handle requests carry to come back to this loop.
    private(set) lazy var handle = LoopHandle(worker: self)
    /// This loop's upstream client, made on first use (on the loop thread).
    private var upstreamClient: UpstreamClient?
    private let idPrefix: String
    private(set) var port: Int = 0

    let tls: TLSServerContext?
    /// Set on a forward-proxy door: decides each CONNECT (see LoopWorker+Tunnels.swift).
    let tunnels: TunnelAuthorizer?

    init(configuration: HTTPServerConfiguration, handler: @escaping HTTPDeferredHandler, budget: ConnectionBudget,
         addressBudget: AddressBudget,
         index: Int, tls: TLSServerContext? = nil, tunnels: TunnelAuthorizer? = nil,
         heartbeat: LoopWatchdog.Heartbeat? = nil) throws(HTTPServerError) {
        precondition(Libevent.threadingReady, "evthread_use_pthreads failed")
        guard let base = Self.makeBase() else { throw .init("event_base_new failed") }
        guard let http = evhttp_new(base) else {
            event_base_free(base)
            throw .init("evhttp_new failed")
        }
        self.base = base
        self.http = http
        self.configuration = configuration
        self.handler = handler
        self.budget = budget
        self.addressBudget = addressBudget
        self.tls = tls
        self.tunnels = tunnels
        self.heartbeat = heartbeat
        self.idPrefix = String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-\(index)-"

        configure(http)
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Every accepted connection, plain or TLS, gets its bufferevent from here: the one
        // moment a connection is seen before any of its bytes is read.
        evhttp_set_bevcb(http, { base, arg in
            Unmanaged<LoopWorker>.fromOpaque(arg!).takeUnretainedValue().makeBufferevent(base!)
        }, me)
        wakeEvent = event_new(base, -1, 0, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().runTasks()
        }, me)
        stopEvent = event_new(base, -1, 0, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().beginDrain()
        }, me)
        acceptedEvent = event_new(base, -1, 0, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().adoptAccepted()
        }, me)
        releaseTimer = CLibevent_timer_new(base, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().releaseClosedFilters()
        }, me)
        sweepTimer = CLibevent_persistent_timer_new(base, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().sweep()
        }, me)
        var tick = timeval(tv_sec: 0, tv_usec: 250_000)
        if let sweepTimer { event_add(sweepTimer, &tick) }
    }

    /// The loop's event base, with epoll's change list: the changes a loop turn makes to a
    /// socket's interest (evhttp stops reading while it answers, then waits for the socket to
    /// take the answer, then reads again) reach the kernel as one `epoll_ctl` when the turn ends
    /// rather than one each, two a request instead of four. The change list's known hazard is a
    /// socket with a second descriptor (`dup()`, or one a child process inherited): closing one
    /// then leaves the kernel's registration alive. Cloak makes no such copy and starts no child
    /// process while serving; code that adds either must make its descriptors close-on-exec.
    private static func makeBase() -> OpaquePointer? {
        guard let config = event_config_new() else { return nil }
        defer { event_config_free(config) }
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        return event_base_new_with_config(config)
    }

    /// Limits, timeouts, methods and the request callback, the same for every evhttp of the loop.
    private func configure(_ http: OpaquePointer) {
        evhttp_set_max_body_size(http, Int(configuration.evhttpBodyCap))
        evhttp_set_max_headers_size(http, Int(configuration.maxHeaderBytes))
        evhttp_set_timeout(http, Int32(configuration.idleTimeoutSeconds))
        evhttp_set_allowed_methods(http, UInt16(Libevent.allMethods))
        evhttp_set_flags(http, Int32(EVHTTP_SERVER_LINGERING_CLOSE))
        evhttp_set_gencb(http, { req, arg in
            guard let req, let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().handle(req)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        forgetListener()  // a loop dropped before it ran (a bind retried on another port) is still listed
        upstreamClient = nil
        // evhttp_free closes the connections left (their close callbacks queue their filters);
        // no libevent callback is on the stack here, so their references go back at once.
        evhttp_free(http)
        releaseClosedFilters()
        if let releaseTimer { event_free(releaseTimer) }
        if let stopEvent { event_free(stopEvent) }
        if let wakeEvent { event_free(wakeEvent) }
        if let drainTimer { event_free(drainTimer) }
        if let acceptedEvent { event_free(acceptedEvent) }
        if let sweepTimer { event_free(sweepTimer) }
        if let acceptPauseTimer { event_free(acceptPauseTimer) }
        event_base_free(base)
    }

    /// Binds the listener with SO_REUSEPORT and TCP_NODELAY. Runs before the thread starts.
    func bind(port: Int) throws(HTTPServerError) {
        guard var address = Libevent.socketAddress(host: configuration.host, port: port) else {
            throw .init("cannot parse listen address \(configuration.host):\(port)")
        }
        let flags = UInt32(LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC)
        let listener = withUnsafeMutablePointer(to: &address.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                evconnlistener_new_bind(base, nil, nil, flags, 1024, $0, address.length)
            }
        }
        guard let listener else {
            throw .init("cannot listen on \(configuration.host):\(port): \(String(cString: strerror(errno)))")
        }
        let fd = evconnlistener_get_fd(listener)
        Libevent.setNoDelay(fd)  // accepted sockets inherit it: no Nagle delay on small replies
        watchAcceptErrors(listener)
        guard let bound = evhttp_bind_listener(http, listener) else {
            evconnlistener_free(listener)
            throw .init("evhttp_bind_listener failed")
        }
        self.bound = bound
        self.port = Libevent.boundPort(fd) ?? port
    }

    /// Runs the loop until drained. Call on the worker's own thread.
    func run() {
        loopThread = pthread_self()
        // `cloak-main-0`, `cloak-egress-1`: the loop's server and index, for top -H and /proc.
        _ = CLibevent_name_thread("cloak-" + (heartbeat?.name ?? "loop"))
        heartbeat?.beat(now: Self.now())
        _ = event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
    }

    /// Asks the loop to stop accepting and drain. Safe from any thread.
    func requestStop() {
        if let stopEvent { event_active(stopEvent, 0, 0) }
    }

    // MARK: - Loop thread only

    private func beginDrain() {
        guard !draining else { return }
        draining = true
        drainDeadline = Date().addingTimeInterval(configuration.drainTimeoutSeconds)
        if let bound {
            forgetListener()
            evhttp_del_accept_socket(http, bound)
            self.bound = nil
        }
        // Idle keep-alive connections close after half a second of silence; a client still
        // sending a request keeps its connection for as long as it keeps sending.
        var tv = timeval(tv_sec: 0, tv_usec: 500_000)
        for connection in connections.keys { evhttp_connection_set_timeout_tv(connection, &tv) }
        drainTimer = CLibevent_persistent_timer_new(base, { _, _, arg in
            guard let arg else { return }
            Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().drainTick()
        }, Unmanaged.passUnretained(self).toOpaque())
        var tick = timeval(tv_sec: 0, tv_usec: 20_000)
        if let drainTimer { event_add(drainTimer, &tick) }
        drainTick()
    }

    private func drainTick() {
        if (connections.isEmpty && inFlight == 0) || Date() >= drainDeadline {
            event_base_loopbreak(base)
        }
    }

    private func handle(_ req: OpaquePointer) {
        var violation: HTTPViolation?
        var closeAfter = draining
        let evcon = evhttp_request_get_connection(req)
        let connection = evcon.flatMap { connections[$0] }
        connection?.dispatched(now: Self.now())

        guard let method = Libevent.method(evhttp_request_get_command(req)) else {
            evhttp_send_error(req, 501, nil)
            return
        }
        var path = "/"
        var rawPath = "/"
        var query: String?
        if let uri = evhttp_request_get_evhttp_uri(req) {
            if let encoded = evhttp_uri_get_path(uri), encoded.pointee != 0 {
                rawPath = String(cString: encoded)
                if strchr(encoded, Int32(UInt8(ascii: "%"))) == nil {
                    path = rawPath  // nothing to decode: the same string
                } else if let decoded = evhttp_uridecode(encoded, 0, nil) {
                    path = String(cString: decoded)
                    free(decoded)
                }
            }
            if let q = evhttp_uri_get_query(uri) { query = String(cString: q) }
        }
        let headers = Libevent.headers(evhttp_request_get_input_headers(req))
        if let broken = connection?.violationOfCurrentRequest {
            // Judged on the raw bytes before evhttp read them (ServerConnection.framing).
            violation = .malformedFraming(reason: broken.description)
            closeAfter = true
        } else if headers.contains(where: { !HTTPSyntax.isToken($0.name) }) {
            // `Name :` or a name with other bytes: RFC 9112 says refuse. evhttp kept the space in
            // the name, so its own framing may disagree with a peer's: close after the answer.
            violation = .invalidHeaderName
            closeAfter = true
        }
        if violation == nil {
            // Compared only when there are two: a body's one Content-Length costs no array.
            let isLength = { (header: (name: String, value: String)) in header.name.caseInsensitiveEquals("Content-Length") }
            if let first = headers.firstIndex(where: isLength), headers[(first + 1)...].contains(where: isLength),
                Set(headers.filter(isLength).map { $0.value.trimmingCharacters(in: .whitespaces) }).count > 1
            {
                violation = .conflictingContentLength
                closeAfter = true
            }
        }
        var body: [UInt8] = []
        if let input = evhttp_request_get_input_buffer(req) {
            let length = evbuffer_get_length(input)
            if length > configuration.maxBodyBytes {
                if violation == nil { violation = .bodyTooLarge(limit: configuration.maxBodyBytes) }
                closeAfter = true
            } else if length > 0 {
                body = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
                    count = Int(evbuffer_remove(input, buffer.baseAddress, length))
                }
            }
        }
        requestCounter &+= 1
        var requestID = RequestID.make(prefix: idPrefix, counter: requestCounter)
        if let given = headers.first(where: { $0.name.caseInsensitiveEquals("X-Request-Id") })?.value,
            RequestID.isWellFormed(given)
        {
            requestID = given
        }

        var request = HTTPRequest(
            method: method, path: path, query: query, headers: headers, body: body, requestID: requestID)
        request.violation = violation
        request.rawPath = rawPath
        request.remoteAddress = connection?.clientAddress ?? ""
        request.forwardingTrusted = connection?.connectionFilter?.namedNoClient != true
        request.loop = handle
        request.proxyTarget = connection?.tunnel ?? Self.absoluteTarget(req)
        if method == .CONNECT, tunnels != nil, let evcon {
            return openTunnel(req, request, evcon: evcon)
        }
        if connection?.connectionFilter != nil && !closeAfter {
            // On the forward-proxy door evhttp must not close after an answer (its filter could
            // lose what the socket has not taken yet): a client that asked for a close
            // (`Connection: close`, HTTP/1.0, absolute form without Proxy-Connection) gets its
            // answer with a length and closes itself; the idle timeout ends the rest.
            LoopWorker.keepAlive(req)
        }
        inFlight += 1
        // The evhttp request travels as an address and is only turned back into a pointer on
        // this loop's thread (in finish).
        let requestBits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(req)))
        let responder = HTTPResponder { [self, closeAfter, requestID] response in
            execute {
                self.finish(OpaquePointer(bitPattern: requestBits)!, response, closeAfter: closeAfter, requestID: requestID)
            }
        }
        handler(request, responder)
    }

    /// Whether the caller runs on this loop's thread.
    var isOnLoop: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    /// Runs `work` on this loop's thread: now when already there, else after waking the loop.
    func execute(_ work: @escaping @Sendable () -> Void) {
        if isOnLoop { return work() }
        tasks.withLock { $0.append(work) }
        if let wakeEvent { event_active(wakeEvent, 0, 0) }
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
        if let upstreamClient { return upstreamClient }
        let client = UpstreamClient(base: base)
        upstreamClient = client
        return client
    }

    private func finish(_ req: OpaquePointer, _ response: HTTPResponse, closeAfter: Bool, requestID: String) {
        var response = response
        inFlight -= 1
        response.headers.append(("X-Request-Id", requestID))
        if closeAfter || draining { response.headers.append(("Connection", "close")) }
        restartClockWhenWritten(req)
        send(response, to: req)
    }

    /// The next head's clock starts when the answer has been written out, not when it is
    /// queued: a large answer to a slow reader is bounded by the write (idle) timeout alone.
    func restartClockWhenWritten(_ req: OpaquePointer) {
        evhttp_request_set_on_complete_cb(req, { req, arg in
            guard let req, let arg else { return }
            let worker = Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue()
            evhttp_request_get_connection(req).flatMap { worker.connections[$0] }?.answered(now: LoopWorker.now())
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func send(_ response: HTTPResponse, to req: OpaquePointer) {
        let outHeaders = evhttp_request_get_output_headers(req)
        // A name or value that could end the header block (an upstream's answer passed through,
        // a revealed value) is dropped, never written.
        var hasDate = false
        for (name, value) in response.headers where HTTPSyntax.isToken(name) && HTTPSyntax.isFieldValue(value) {
            // withCString lends the string's own bytes; passing a String where C wants a pointer
            // would copy it into a new array first.
            let added = name.withCString { name in value.withCString { value in evhttp_add_header(outHeaders, name, value) } }
            if added == 0 && name.utf8.count == 4 && name.caseInsensitiveEquals("Date") { hasDate = true }
        }
        if !hasDate {
            // The loop's cached text, made once a second, so that evhttp does not format one.
            // time() is the wall clock without a lock (the loop's cached time takes the base's
            // lock and trails a clock step by seconds).
            date.update(to: time(nil))
            _ = date.cString.withUnsafeBufferPointer { evhttp_add_header(outHeaders, "Date", $0.baseAddress) }
        }
        if !response.body.isEmpty, let out = evhttp_request_get_output_buffer(req) {
            _ = response.body.withUnsafeBytes { evbuffer_add(out, $0.baseAddress, $0.count) }
        }
        let reason = reasonPhrase(response.status)  // NUL-terminated static text
        reason.utf8Start.withMemoryRebound(to: CChar.self, capacity: reason.utf8CodeUnitCount + 1) {
            evhttp_send_reply(req, Int32(response.status), $0, nil)
        }
    }

    /// Marks a request keep-alive for evhttp (its input headers decide whether it closes).
    static func keepAlive(_ req: OpaquePointer) {
        guard let input = evhttp_request_get_input_headers(req) else { return }
        evhttp_remove_header(input, "Connection")
        evhttp_remove_header(input, "Proxy-Connection")
        evhttp_add_header(input, "Connection", "keep-alive")
        evhttp_add_header(input, "Proxy-Connection", "keep-alive")
    }

    /// Nanoseconds of the monotonic clock.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
