import CLibevent
import Glibc

/// The C function libevent calls for an event, a timer or a `once`.
typealias EventCallback = @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void

/// One loop's `event_base`. Loop thread only, except ``LoopEvent/activate()``.
struct EventBase {
    let raw: OpaquePointer

    /// A base with epoll's change list: the changes a loop turn makes to a socket's interest
    /// (a connection stops reading while it answers, waits for the socket to take a long answer,
    /// then reads again) reach the kernel as one `epoll_ctl` when the turn ends rather than one
    /// each, two a request instead of four. The change list's known hazard is a socket with a
    /// second descriptor (`dup()`, or one a child process inherited): closing one then leaves
    /// the kernel's registration alive. Cloak makes no such copy and starts no child process
    /// while serving; code that adds either must make its descriptors close-on-exec.
    static func make() -> EventBase? {
        guard let config = event_config_new() else { return nil }
        defer { event_config_free(config) }
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        return event_base_new_with_config(config).map(EventBase.init)
    }

    func free() { event_base_free(raw) }

    /// Runs the loop until ``breakLoop()``, even with nothing to wait for.
    func run() { _ = event_base_loop(raw, EVLOOP_NO_EXIT_ON_EMPTY) }

    func breakLoop() { event_base_loopbreak(raw) }

    /// Calls `callback` once, on the next loop turn.
    func onNextTurn(_ callback: EventCallback, _ argument: UnsafeMutableRawPointer) {
        var now = timeval(tv_sec: 0, tv_usec: 0)
        _ = event_base_once(raw, -1, Int16(EV_TIMEOUT), callback, argument, &now)
    }
}

/// An event of a loop: a user event other code activates, or a timer.
struct LoopEvent {
    let raw: OpaquePointer

    /// An event that fires when activated (``activate()``), from any thread.
    static func user(_ base: EventBase, _ callback: EventCallback, _ argument: UnsafeMutableRawPointer?) -> LoopEvent? {
        event_new(base.raw, -1, 0, callback, argument).map(LoopEvent.init)
    }

    /// A one-shot timer (armed by ``schedule(after:)``).
    static func timer(_ base: EventBase, _ callback: EventCallback, _ argument: UnsafeMutableRawPointer?) -> LoopEvent?
    {
        CLibevent_timer_new(base.raw, callback, argument).map(LoopEvent.init)
    }

    /// A timer that fires every interval once scheduled.
    static func repeating(_ base: EventBase, _ callback: EventCallback, _ argument: UnsafeMutableRawPointer?)
        -> LoopEvent?
    {
        CLibevent_persistent_timer_new(base.raw, callback, argument).map(LoopEvent.init)
    }

    /// An event for `fd` becoming readable (`persistent`: until freed) or writable (once per ``add()``).
    static func socket(
        _ base: EventBase, _ fd: Int32, readable: Bool, _ callback: EventCallback, _ argument: UnsafeMutableRawPointer?
    ) -> LoopEvent? {
        let what = readable ? Int16(EV_READ | EV_PERSIST) : Int16(EV_WRITE)
        return event_new(base.raw, fd, what, callback, argument).map(LoopEvent.init)
    }

    /// Waits for the event, without a timeout.
    func add() { event_add(raw, nil) }

    /// Fires the event on its loop's next turn: the one libevent call safe from any thread.
    func activate() { event_active(raw, 0, 0) }

    /// Arms the timer to fire after `seconds` (again every `seconds` for a repeating one).
    func schedule(after seconds: Double) {
        var tv = timeval(seconds: seconds)
        event_add(raw, &tv)
    }

    func cancel() { event_del(raw) }

    func free() { event_free(raw) }
}

/// A listening socket bound with SO_REUSEPORT (one per loop).
struct Listener {
    let raw: OpaquePointer

    /// Binds with SO_REUSEADDR, SO_REUSEPORT, close-on-free and close-on-exec, backlog 1024;
    /// `callback` gets every accepted socket (non-blocking, close-on-exec) and its address.
    static func bind(
        _ base: EventBase, address: inout (storage: sockaddr_storage, length: Int32),
        _ callback: @escaping evconnlistener_cb, _ argument: UnsafeMutableRawPointer
    ) -> Listener? {
        let flags = UInt32(LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC)
        let length = address.length
        return withUnsafeMutablePointer(to: &address.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                evconnlistener_new_bind(base.raw, callback, argument, flags, 1024, $0, length)
            }
        }.map(Listener.init)
    }

    var fd: Int32 { evconnlistener_get_fd(raw) }

    /// `callback` runs when `accept` fails (its second argument is the accept callback's).
    func onAcceptError(_ callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void) {
        evconnlistener_set_error_cb(raw, callback)
    }

    func enable() { evconnlistener_enable(raw) }
    func disable() { evconnlistener_disable(raw) }
    func free() { evconnlistener_free(raw) }
}

/// The loop's asynchronous DNS resolver (evdns, the system's name servers).
struct DNSResolver {
    let raw: OpaquePointer

    static func make(_ base: EventBase) -> DNSResolver? {
        evdns_base_new(base.raw, Int32(EVDNS_BASE_INITIALIZE_NAMESERVERS)).map(DNSResolver.init)
    }

    func free() { evdns_base_free(raw, 0) }

    /// Resolves `host` (TCP, any family) and calls `completion` with the first numeric address,
    /// or nil; `argument` is passed back as it was given.
    func resolve(
        _ host: String, _ argument: UnsafeMutableRawPointer,
        _ completion: @convention(c) (_ address: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) -> Void
    ) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // The completion travels with the argument: a C callback cannot capture it.
        let box = UnsafeMutablePointer<ResolveContext>.allocate(capacity: 1)
        box.initialize(to: ResolveContext(argument: argument, completion: completion))
        _ = evdns_getaddrinfo(
            raw, host, nil, &hints,
            { result, info, arg in
                let box = arg!.assumingMemoryBound(to: ResolveContext.self)
                let context = box.move()
                box.deallocate()
                defer { if let info { evutil_freeaddrinfo(info) } }
                guard result == 0, let info, let address = Sockets.numeric(info.pointee.ai_addr) else {
                    return context.completion(nil, context.argument)
                }
                address.withCString { context.completion($0, context.argument) }
            }, box)
    }

    private struct ResolveContext {
        let argument: UnsafeMutableRawPointer
        let completion: @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void
    }
}

enum Libevent {
    /// Makes the event bases safe for `event_active` from other threads. Idempotent.
    static let threadingReady: Bool = evthread_use_pthreads() == 0

    /// Names the calling thread (at most 15 bytes are kept): `cloak-main-0` in `top -H`.
    static func nameThread(_ name: String) { _ = CLibevent_name_thread(name) }

    /// The time slice a loop thread asks the scheduler for (the kernel's floor): a loop that
    /// wakes for a request takes its core from a background thread at once, not after that
    /// thread's slice (issue 60: `/validate` beside an import).
    static let loopSliceNanoseconds: UInt64 = 100_000

    /// Asks for ``loopSliceNanoseconds`` for the calling thread (see `CLibevent_request_slice`).
    static func requestShortSlice() { _ = CLibevent_request_slice(loopSliceNanoseconds) }
}

extension timeval {
    /// `seconds` as a timeval: negative and NaN are 0, anything past a year is a year (a timer
    /// or timeout given by a caller can never trap the loop's conversion).
    init(seconds: Double) {
        let bounded = seconds.isNaN ? 0 : min(max(seconds, 0), 365 * 86_400)
        let whole = bounded.rounded(.down)
        self.init(tv_sec: Int(whole), tv_usec: Int((bounded - whole) * 1_000_000))
    }
}
