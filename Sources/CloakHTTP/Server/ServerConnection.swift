import CLibevent
import Foundation
import Glibc

/// One accepted connection, owned by its loop: its bufferevent (made by the loop, so every
/// connection, plain or TLS, is seen at accept), the evhttp connection once evhttp has made it,
/// its slot in the connection budget and its ``RequestClock``.
///
/// What changes is one ``LoopBound`` value, its thread checked on every access. The worker keeps
/// the connection alive from accept until evhttp closes it.
final class ServerConnection {
    let bufferevent: Bufferevent
    let admission: Admission

    /// What changes over the connection's life.
    struct State {
        var evcon: OpaquePointer?
        var clock: RequestClock
        /// The peer's numeric address (a balancer's, behind one).
        var peer = ""
        /// The address this connection counts under in the per-address budget, once counted.
        var addressKey: String?
        /// The callback on the bufferevent's input buffer that feeds the clock.
        var inputCallback: OpaquePointer?
        /// Whether the connection speaks TLS (a refusal is then a close, not a canned answer).
        var isTLS = false
        /// For a connection inside a CONNECT tunnel: where its requests go.
        var tunnel: ProxyTarget?
        /// On a forward-proxy door: the filter that turns to TLS when a CONNECT is granted.
        var connectionFilter: ConnectionFilter?
        /// The strict framing of every byte the client sends (``RequestFraming``): a violation is
        /// answered 400 and the connection closed (``LoopWorker``).
        var framing = RequestFraming()
        /// Requests evhttp handed to the loop on this connection.
        var requestsDispatched = 0
        /// The input buffer's length when the request was handed to the handler: evhttp stops
        /// reading then and touches the buffer again only after the answer, so what lies past
        /// it at the answer arrived while the callback was off.
        var lengthAtDispatch = 0
        /// Whether ``inputCallback`` is enabled (it is when added).
        var watching = true
    }

    /// The input callback reads and changes it on every read: each entry point takes it once
    /// (one check) and works on it in place.
    @exclusivity(unchecked) private var state: LoopBound<State>

    /// - Parameter servesConnect: the listener opens tunnels (a forward-proxy door); elsewhere a
    ///   CONNECT is a framing violation.
    init(bufferevent: Bufferevent, admission: Admission, now: UInt64, thread: LoopThread, servesConnect: Bool = false) {
        self.bufferevent = bufferevent
        self.admission = admission
        var state = State(clock: RequestClock(now: now))
        state.framing = RequestFraming(afterConnect: servesConnect ? .keepScanning : .refuse)
        self.state = LoopBound(state, loop: thread)
    }

    var evcon: OpaquePointer? {
        get { state.withValue { $0.evcon } }
        set { state.withValue { $0.evcon = newValue } }
    }
    var clock: RequestClock {
        get { state.withValue { $0.clock } }
        set { state.withValue { $0.clock = newValue } }
    }
    var peer: String {
        get { state.withValue { $0.peer } }
        set { state.withValue { $0.peer = newValue } }
    }
    var addressKey: String? {
        get { state.withValue { $0.addressKey } }
        set { state.withValue { $0.addressKey = newValue } }
    }
    var inputCallback: OpaquePointer? {
        get { state.withValue { $0.inputCallback } }
        set { state.withValue { $0.inputCallback = newValue } }
    }
    var isTLS: Bool {
        get { state.withValue { $0.isTLS } }
        set { state.withValue { $0.isTLS = newValue } }
    }
    var tunnel: ProxyTarget? {
        get { state.withValue { $0.tunnel } }
        set { state.withValue { $0.tunnel = newValue } }
    }
    var connectionFilter: ConnectionFilter? {
        get { state.withValue { $0.connectionFilter } }
        set { state.withValue { $0.connectionFilter = newValue } }
    }

    /// Whether its head or body deadline has passed (the sweep closes it).
    func isExpired(now: UInt64, headerTimeout: UInt64, bodyTimeout: UInt64) -> Bool {
        state.withValue { $0.clock.isExpired(now: now, headerTimeout: headerTimeout, bodyTimeout: bodyTimeout) }
    }

    /// Whether the framing scan found a violation while no request of the connection is with the
    /// handler (the sweep answers it 400 and closes).
    var isViolatedOutsideHandling: Bool {
        state.withValue { $0.framing.isViolated && $0.clock.phase != .handling }
    }

    /// The client's address: the one a PROXY header named, else the peer's.
    var clientAddress: String { state.withValue { $0.connectionFilter?.state.proxiedSource ?? $0.peer } }

    /// The framing violation of the request just dispatched: nil for a request whose bytes were
    /// all framed before the violation (a pipelined one ahead of it is answered as usual).
    var violationOfCurrentRequest: RequestFraming.Violation? {
        state.withValue { s in
            guard let violation = s.framing.violation, s.requestsDispatched > s.framing.requestsFramed else {
                return nil
            }
            return violation
        }
    }

    /// Feeds the framing scan (every byte, in order) and, while a head is awaited, the clock with
    /// bytes just added to the input buffer (the last `added` bytes). Runs before evhttp reads
    /// them, so a request is dispatched only after its own bytes were judged.
    func inputGrew(by added: Int, now: UInt64) {
        guard added > 0, let input = bufferevent.input else { return }
        state.withValue { Self.inputGrew(&$0, input: input, added: added, now: now) }
    }

    private static func inputGrew(_ s: inout State, input: EvBuffer, added: Int, now: UInt64) {
        let length = input.count
        let start = length - min(added, length)
        if s.framing.isScanning {
            input.peek(from: start) { s.framing.consume($0) != .scanning }
        }
        if s.clock.phase == .awaitingHead {
            input.peek(from: start) { s.clock.received($0, now: now) }
        }
        watchInput(&s, input)
    }

    /// The request was read whole and handed to the handler: evhttp reads nothing more until
    /// it is answered, so the input callback goes off (it would see only evhttp's drains).
    func dispatched(now: UInt64) {
        let input = bufferevent.input
        let buffered = state.withValue { Self.dispatched(&$0, input: input, now: now) }
        bufferevent.limitInput(to: buffered + Self.inputAllowanceWhileHandled)
    }

    /// Bounds what waits to be written below the connection's filter (TLS, PROXY protocol, the
    /// forward door, requests inside tunnels) at ``outputAllowance`` (issue 44, defect 1): a
    /// filter handed every answer to the socket's buffer at once, evhttp took that for the
    /// answer having been written, lifted the read limit (``answered(now:)``) and went on to
    /// the next pipelined request, so a client that never read grew the server by a gigabyte
    /// in seconds. Now the next answer waits in the filter until the last has left, evhttp's
    /// "written" comes only then, and reading stays limited meanwhile. (The input has no
    /// standing limit: evhttp reads a body only once all of it is in the buffer.)
    func limitBuffers() {
        bufferevent.limitOutputBelow(to: Self.outputAllowance)
    }

    /// What may wait to be written below a filter before it passes no more down.
    static let outputAllowance = 64 * 1024

    /// The client asked for the connection to end after this answer, and evhttp keeps it open
    /// (a filter's connection): whatever it sent behind the request is dropped, now and as it
    /// comes, and never parsed as a request (issue 44, defect 10).
    func stopReadingRequests() {
        connectionFilter?.discardInput()
        bufferevent.input?.drainAll()
    }

    /// Bytes a client may add to its input while its request is handled and answered, past what
    /// it had sent when the request was dispatched. evhttp reads again while it writes an answer
    /// (to notice a close) and takes nothing of what arrives, and no deadline runs then: without
    /// a limit, one client pipelining requests without reading the answers filled the process's
    /// memory (a gigabyte in seconds). At the limit reading stops, and TCP pushes back, until the
    /// answer is written (``answered(now:)`` lifts it).
    static let inputAllowanceWhileHandled = 64 * 1024

    /// The bytes in the input at dispatch (pipelined ones).
    private static func dispatched(_ s: inout State, input: EvBuffer?, now: UInt64) -> Int {
        s.clock.dispatched(now: now)
        s.requestsDispatched += 1
        guard let input else { return 0 }
        s.lengthAtDispatch = input.count
        watchInput(&s, input)
        return s.lengthAtDispatch
    }

    /// The answer was sent: the next head's clock starts, whatever the client already sent of
    /// its next request (pipelined) is given to the clock now, and bytes that came while the
    /// callback was off are given to the framing scan.
    func answered(now: UInt64) {
        let input = bufferevent.input
        state.withValue { Self.answered(&$0, input: input, now: now) }
        bufferevent.limitInput(to: nil)
    }

    private static func answered(_ s: inout State, input: EvBuffer?, now: UInt64) {
        s.clock.answered(now: now)
        guard let input else { return }
        let length = input.count
        if s.framing.isScanning && length > s.lengthAtDispatch {
            input.peek(from: s.lengthAtDispatch) { s.framing.consume($0) != .scanning }
        }
        s.lengthAtDispatch = 0
        if length > 0 { input.peek(from: 0) { s.clock.received($0, now: now) } }
        watchInput(&s, input)
    }

    /// The input callback is wanted while a head is awaited, and while the framing scan runs
    /// (every byte, bodies included, until a violation) except from a request's dispatch to its
    /// answer, when evhttp reads nothing (``answered(now:)`` scans what came meanwhile). evbuffer
    /// calls it on every change to the buffer, each line evhttp reads and drains included; only
    /// additions are looked at.
    private static func watchInput(_ s: inout State, _ input: EvBuffer) {
        let wanted = s.clock.phase == .awaitingHead || (s.framing.isScanning && s.clock.phase != .handling)
        guard wanted != s.watching, let entry = s.inputCallback else { return }
        input.setEnabled(entry, wanted)
        s.watching = wanted
    }

    /// Writes a canned answer straight to the socket, without waiting (a refusal at accept).
    func writeNow(_ bytes: [UInt8]) {
        state.loop.check()
        let fd = bufferevent.fd
        guard fd >= 0 else { return }
        bytes.withUnsafeBytes { raw in
            _ = send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
    }
}
