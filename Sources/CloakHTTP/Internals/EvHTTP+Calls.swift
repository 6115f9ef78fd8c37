import CLibevent
import Glibc

/// The evhttp server object of one loop: its limits, its callbacks and its listeners.
struct EvHTTPServer {
    let raw: OpaquePointer

    static func make(_ base: EventBase) -> EvHTTPServer? { evhttp_new(base.raw).map(EvHTTPServer.init) }

    /// Frees it and every connection it still has (their close callbacks run).
    func free() { evhttp_free(raw) }

    /// Body and head limits, the idle timeout, every method (the router answers 405, not
    /// evhttp), and a lingering close (a refused client still reads its answer).
    func configure(maxBodyBytes: Int, maxHeaderBytes: Int, idleTimeoutSeconds: Int) {
        evhttp_set_max_body_size(raw, maxBodyBytes)
        evhttp_set_max_headers_size(raw, maxHeaderBytes)
        evhttp_set_timeout(raw, Int32(idleTimeoutSeconds))
        evhttp_set_allowed_methods(raw, UInt16(EvRequest.allMethods))
        evhttp_set_flags(raw, Int32(EVHTTP_SERVER_LINGERING_CLOSE))
    }

    /// `callback` gets every complete request (its first argument is the request's `raw`).
    func onRequest(
        _ callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void,
        _ argument: UnsafeMutableRawPointer
    ) {
        evhttp_set_gencb(raw, callback, argument)
    }

    /// `callback` makes every accepted connection's bufferevent (its first argument is the base).
    func onAccept(
        _ callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> OpaquePointer?,
        _ argument: UnsafeMutableRawPointer
    ) {
        evhttp_set_bevcb(raw, callback, argument)
    }

    /// Serves `listener`'s connections; the handle ``stopAccepting(_:)`` takes.
    func serve(_ listener: Listener) -> OpaquePointer? { evhttp_bind_listener(raw, listener.raw) }

    /// Closes a listener ``serve(_:)`` bound.
    func stopAccepting(_ bound: OpaquePointer) { evhttp_del_accept_socket(raw, bound) }
}

/// An evhttp connection: a served client's, or one to an upstream.
struct EvConnection {
    let raw: OpaquePointer

    /// A connection to `address` (numeric) over `bufferevent` (nil: plain TCP), without retries
    /// and with the answer's body capped at `maxBodyBytes`.
    static func upstream(
        _ base: EventBase, over bufferevent: Bufferevent?, address: String, port: Int, maxBodyBytes: Int
    )
        -> EvConnection?
    {
        guard let made = evhttp_connection_base_bufferevent_new(base.raw, nil, bufferevent?.raw, address, UInt16(port))
        else {
            return nil
        }
        evhttp_connection_set_retries(made, 0)
        evhttp_connection_set_max_body_size(made, maxBodyBytes)
        return EvConnection(raw: made)
    }

    func free() { evhttp_connection_free(raw) }

    /// The peer's numeric address.
    var peer: String {
        var address: UnsafeMutablePointer<CChar>?
        var port: UInt16 = 0
        evhttp_connection_get_peer(raw, &address, &port)
        return address.map { String(cString: $0) } ?? ""
    }

    var bufferevent: Bufferevent? { evhttp_connection_get_bufferevent(raw).map(Bufferevent.init) }

    /// `callback` runs when evhttp frees (or loses) the connection; nil removes it.
    func onClose(
        _ callback: (@convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void)?,
        _ argument: UnsafeMutableRawPointer?
    ) {
        evhttp_connection_set_closecb(raw, callback, argument)
    }

    /// The read and write timeout (an idle keep-alive connection closes after it).
    func setTimeout(seconds: Double) {
        var tv = timeval(seconds: seconds)
        evhttp_connection_set_timeout_tv(raw, &tv)
    }

    /// Sends `request` (which evhttp then owns); false when it could not (evhttp freed it).
    func send(_ request: EvRequest, _ method: HTTPMethod, target: String) -> Bool {
        evhttp_make_request(raw, request.raw, EvRequest.command(method), target) == 0
    }
}

/// The header list of a request or an answer.
struct EvHeaders {
    let raw: UnsafeMutablePointer<evkeyvalq>

    /// Adds a field; false when evhttp refused it. The strings are lent, not copied first.
    @discardableResult
    func add(_ name: String, _ value: String) -> Bool {
        name.withCString { name in value.withCString { value in evhttp_add_header(raw, name, value) } } == 0
    }

    func add(_ name: StaticString, _ value: UnsafePointer<CChar>?) {
        name.utf8Start.withMemoryRebound(to: CChar.self, capacity: name.utf8CodeUnitCount + 1) {
            _ = evhttp_add_header(raw, $0, value)
        }
    }

    func remove(_ name: String) { evhttp_remove_header(raw, name) }

    /// Every field, in order.
    var all: [(name: String, value: String)] {
        var count = 0
        var node = raw.pointee.tqh_first
        while let n = node {
            count += 1
            node = n.pointee.next.tqe_next
        }
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(count)  // counted first: one allocation instead of one per doubling
        node = raw.pointee.tqh_first
        while let n = node {
            if let k = n.pointee.key, let v = n.pointee.value {
                out.append((String(cString: k), String(cString: v)))
            }
            node = n.pointee.next.tqe_next
        }
        return out
    }
}
