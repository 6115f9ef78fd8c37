import Foundation

/// One accepted connection, owned by its loop: its bufferevent (made by the loop, so every
/// connection, plain or TLS, is seen at accept), the evhttp connection once evhttp has made it,
/// its slot in the connection budget and its ``RequestClock``.
///
/// Loop thread only, checked at every entry point. The worker keeps it alive from accept until
/// evhttp closes the connection.
final class ServerConnection {
    let bufferevent: Bufferevent
    let admission: Admission

    /// The thread of the loop that owns it: every entry point (the input callback, dispatch,
    /// answer, a refusal) checks it. Its fields are plain, not a ``LoopBound`` value, because the
    /// input callback reads them on every read: forwarding each through the box's coroutine
    /// accessors cost 1.7k instructions a request (callgrind, `GET /healthz`).
    let thread: LoopThread
    var evcon: OpaquePointer?
    @exclusivity(unchecked) var clock: RequestClock
    /// The peer's numeric address (a balancer's, behind one).
    var peer = ""
    /// The address this connection counts under in the per-address budget, once counted.
    var addressKey: String?
    /// The client's address: the one a PROXY header named, else the peer's.
    var clientAddress: String { connectionFilter?.proxiedSource ?? peer }
    /// The callback on the bufferevent's input buffer that feeds the clock.
    var inputCallback: OpaquePointer?
    /// Whether the connection speaks TLS (a refusal is then a close, not a canned answer).
    var isTLS = false
    /// For a connection inside a CONNECT tunnel: where its requests go.
    var tunnel: ProxyTarget?
    /// On a forward-proxy door: the filter that turns to TLS when a CONNECT is granted.
    var connectionFilter: ConnectionFilter?

    init(bufferevent: Bufferevent, admission: Admission, now: UInt64, thread: LoopThread) {
        self.bufferevent = bufferevent
        self.admission = admission
        self.clock = RequestClock(now: now)
        self.thread = thread
    }

    /// The strict framing of every byte the client sends (``RequestFraming``): a violation is
    /// answered 400 and the connection closed (``LoopWorker``).
    @exclusivity(unchecked) var framing = RequestFraming()

    /// Feeds the framing scan (every byte, in order) and, while a head is awaited, the clock with
    /// bytes just added to the input buffer (the last `added` bytes). Runs before evhttp reads
    /// them, so a request is dispatched only after its own bytes were judged.
    func inputGrew(by added: Int, now: UInt64) {
        thread.check()
        guard added > 0, let input = bufferevent.input else { return }
        let length = input.count
        let start = length - min(added, length)
        if framing.isScanning {
            input.peek(from: start) { framing.consume($0) != .scanning }
        }
        if clock.phase == .awaitingHead {
            input.peek(from: start) { clock.received($0, now: now) }
        }
        watchInput(input)
    }

    /// Requests evhttp handed to the loop on this connection.
    @exclusivity(unchecked) private(set) var requestsDispatched = 0

    /// The framing violation of the request just dispatched: nil for a request whose bytes were
    /// all framed before the violation (a pipelined one ahead of it is answered as usual).
    var violationOfCurrentRequest: RequestFraming.Violation? {
        guard let violation = framing.violation, requestsDispatched > framing.requestsFramed else { return nil }
        return violation
    }

    /// The input buffer's length when the request was handed to the handler: evhttp stops
    /// reading then and touches the buffer again only after the answer, so what lies past it
    /// at the answer arrived while the callback was off.
    @exclusivity(unchecked) private var lengthAtDispatch = 0

    /// The request was read whole and handed to the handler: evhttp reads nothing more until
    /// it is answered, so the input callback goes off (it would see only evhttp's drains).
    func dispatched(now: UInt64) {
        thread.check()
        clock.dispatched(now: now)
        requestsDispatched += 1
        guard let input = bufferevent.input else { return }
        lengthAtDispatch = input.count
        watchInput(input)
    }

    /// The answer was sent: the next head's clock starts, whatever the client already sent of
    /// its next request (pipelined) is given to the clock now, and bytes that came while the
    /// callback was off are given to the framing scan.
    func answered(now: UInt64) {
        thread.check()
        clock.answered(now: now)
        guard let input = bufferevent.input else { return }
        let length = input.count
        if framing.isScanning && length > lengthAtDispatch {
            input.peek(from: lengthAtDispatch) { framing.consume($0) != .scanning }
        }
        lengthAtDispatch = 0
        if length > 0 { input.peek(from: 0) { clock.received($0, now: now) } }
        watchInput(input)
    }

    /// Whether ``inputCallback`` is enabled (it is when added).
    @exclusivity(unchecked) private var watching = true

    /// The input callback is wanted while a head is awaited, and while the framing scan runs
    /// (every byte, bodies included, until a violation) except from a request's dispatch to its
    /// answer, when evhttp reads nothing (``answered(now:)`` scans what came meanwhile). evbuffer
    /// calls it on every change to the buffer, each line evhttp reads and drains included; only
    /// additions are looked at.
    private func watchInput(_ input: EvBuffer) {
        let wanted = clock.phase == .awaitingHead || (framing.isScanning && clock.phase != .handling)
        guard wanted != watching, let entry = inputCallback else { return }
        input.setEnabled(entry, wanted)
        watching = wanted
    }

    /// Writes a canned answer straight to the socket, without waiting (a refusal at accept).
    func writeNow(_ bytes: [UInt8]) {
        thread.check()
        let fd = bufferevent.fd
        guard fd >= 0 else { return }
        bytes.withUnsafeBytes { raw in
            _ = send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
    }
}
