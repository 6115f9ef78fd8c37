import CLibevent
import COpenSSL
import Glibc

/// An evbuffer: the bytes of one direction of a bufferevent, or a free-standing buffer.
struct EvBuffer {
    let raw: OpaquePointer

    static func make() -> EvBuffer? { evbuffer_new().map(EvBuffer.init) }
    func free() { evbuffer_free(raw) }

    var count: Int { evbuffer_get_length(raw) }

    /// Moves up to `max` bytes out into `destination`; the number moved.
    func remove(into destination: UnsafeMutableRawPointer?, max: Int) -> Int {
        Int(evbuffer_remove(raw, destination, max))
    }
    /// Copies up to `max` bytes out into `destination`, leaving them; the number copied.
    func copy(into destination: UnsafeMutableRawPointer?, max: Int) -> Int {
        Int(evbuffer_copyout(raw, destination, max))
    }
    func append(_ bytes: UnsafeRawPointer?, count: Int) { evbuffer_add(raw, bytes, count) }
    func append(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { evbuffer_add(raw, $0.baseAddress, $0.count) } }
    /// Moves every byte of `other` to the end of this buffer (no copy).
    func append(contentsOf other: EvBuffer) { evbuffer_add_buffer(raw, other.raw) }
    func drain(_ count: Int) { evbuffer_drain(raw, count) }
    func drainAll() { evbuffer_drain(raw, evbuffer_get_length(raw)) }
    /// Writes to the socket what it takes now; the bytes written, or -1.
    func write(to fd: Int32) -> Int { Int(evbuffer_write(raw, fd)) }

    /// Every byte, moved out into an array (one allocation).
    func removeAll() -> [UInt8] {
        let length = count
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, made in
            made = length > 0 ? Int(evbuffer_remove(raw, buffer.baseAddress, length)) : 0
        }
    }

    /// Shows `visit` the bytes from `start` in place, chunk by chunk, until it returns true.
    func peek(from start: Int, _ visit: (UnsafeRawBufferPointer) -> Bool) {
        var position = evbuffer_ptr()
        guard evbuffer_ptr_set(raw, &position, start, EVBUFFER_PTR_SET) == 0 else { return }
        let wanted = count - start
        // The chunks are peeked at in batches of eight, on the stack (a read is almost always one).
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 8) { chunks in
            var remaining = wanted
            while remaining > 0 {
                let found = Int(evbuffer_peek(raw, remaining, &position, chunks.baseAddress, 8))
                guard found > 0 else { return }
                for chunk in chunks.prefix(min(found, 8)) {
                    guard let base = chunk.iov_base else { continue }
                    let length = min(chunk.iov_len, remaining)
                    if visit(UnsafeRawBufferPointer(start: base, count: length)) { return }
                    remaining -= length
                }
                guard found > 8, remaining > 0,
                    evbuffer_ptr_set(raw, &position, count - remaining, EVBUFFER_PTR_SET) == 0
                else { return }
            }
        }
    }

    // MARK: Callbacks (each calls one Swift owner: a C callback cannot capture)

    /// Tells `connection` of every addition (``ServerConnection/inputGrew(by:now:)``); the entry
    /// turns it off and on (``setEnabled(_:_:)``) and removes it (``remove(_:)``).
    func reportAdditions(to connection: ServerConnection) -> OpaquePointer? {
        evbuffer_add_cb(
            raw,
            { _, info, arg in
                guard let info, info.pointee.n_added > 0, let arg else { return }
                Unmanaged<ServerConnection>.fromOpaque(arg).takeUnretainedValue()
                    .inputGrew(by: info.pointee.n_added, now: LoopWorker.now())
            }, Unmanaged.passUnretained(connection).toOpaque())
    }

    /// Tells `filter` of every addition (``ConnectionFilter/outputAdded()``).
    func reportAdditions(to filter: ConnectionFilter) {
        evbuffer_add_cb(
            raw,
            { _, info, arg in
                guard let info, let arg, info.pointee.n_added > 0 else { return }
                Unmanaged<ConnectionFilter>.fromOpaque(arg).takeUnretainedValue().outputAdded()
            }, Unmanaged.passUnretained(filter).toOpaque())
    }

    func setEnabled(_ entry: OpaquePointer, _ enabled: Bool) {
        if enabled {
            evbuffer_cb_set_flags(raw, entry, UInt32(EVBUFFER_CB_ENABLED))
        } else {
            evbuffer_cb_clear_flags(raw, entry, UInt32(EVBUFFER_CB_ENABLED))
        }
    }

    func remove(_ entry: OpaquePointer) { evbuffer_remove_cb_entry(raw, entry) }
}

/// A bufferevent: a socket (or a filter over another bufferevent) with its two buffers. Every
/// one Cloak makes closes what is under it when freed.
struct Bufferevent {
    let raw: OpaquePointer
    private static let closeOnFree = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)

    /// A plain socket bufferevent (its socket set later, by evhttp).
    static func socket(_ base: EventBase) -> Bufferevent? {
        bufferevent_socket_new(base.raw, -1, closeOnFree).map(Bufferevent.init)
    }

    /// A client-side TLS bufferevent (takes `ssl`), callbacks deferred to the loop, a peer's
    /// close without close_notify taken as the end of the answer.
    static func connectingTLS(_ base: EventBase, _ ssl: OpaquePointer) -> Bufferevent? {
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard let made = bufferevent_openssl_socket_new(base.raw, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options) else {
            return nil
        }
        bufferevent_openssl_set_allow_dirty_shutdown(made, 1)
        return Bufferevent(raw: made)
    }

    /// ``ConnectionFilter`` over `socket`: the filter bufferevent holds a reference on `filter`,
    /// given back when libevent finalizes it.
    static func filter(over socket: Bufferevent, _ filter: ConnectionFilter) -> Bufferevent? {
        let retained = Unmanaged.passRetained(filter).toOpaque()
        guard
            let made = bufferevent_filter_new(
                socket.raw,
                { src, dst, _, _, ctx in
                    Unmanaged<ConnectionFilter>.fromOpaque(ctx!).takeUnretainedValue()
                        .input(EvBuffer(raw: src!), EvBuffer(raw: dst!)).libevent
                },
                { src, dst, _, _, ctx in
                    Unmanaged<ConnectionFilter>.fromOpaque(ctx!).takeUnretainedValue()
                        .output(EvBuffer(raw: src!), EvBuffer(raw: dst!)).libevent
                }, closeOnFree,
                { ctx in
                    Unmanaged<ConnectionFilter>.fromOpaque(ctx!).release()
                }, retained)
        else {
            Unmanaged<ConnectionFilter>.fromOpaque(retained).release()
            return nil
        }
        return Bufferevent(raw: made)
    }

    var input: EvBuffer? { bufferevent_get_input(raw).map(EvBuffer.init) }
    var output: EvBuffer? { bufferevent_get_output(raw).map(EvBuffer.init) }
    /// The socket, or -1 (none yet, or closed).
    var fd: Int32 { bufferevent_getfd(raw) }
    /// The bufferevent a filter sits on.
    var underlying: Bufferevent? { bufferevent_get_underlying(raw).map(Bufferevent.init) }
    /// The argument of its callbacks (evhttp's connection, once evhttp has set them).
    var callbackArgument: UnsafeMutableRawPointer? {
        var argument: UnsafeMutableRawPointer?
        bufferevent_getcb(raw, nil, nil, nil, &argument)
        return argument
    }

    /// Calls `read` when input arrives and `event` on connect, end of file and errors; reading on.
    func onInput(
        _ read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void,
        events: @convention(c) (OpaquePointer?, Int16, UnsafeMutableRawPointer?) -> Void,
        _ argument: UnsafeMutableRawPointer
    ) {
        bufferevent_setcb(raw, read, nil, events, argument)
        bufferevent_enable(raw, Int16(EV_READ))
    }

    /// Whether the TLS peer sent close_notify (its end of the stream is a real one).
    var receivedCloseNotify: Bool {
        guard let ssl = bufferevent_openssl_get_ssl(raw) else { return false }
        return SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN != 0
    }

    /// Stops reading while the input holds `limit` bytes or more (TCP pushes back), here and in
    /// every bufferevent below this one (a filter's, TLS's socket); nil: no limit. Reading
    /// resumes by itself once the input is drained below the limit, or the limit is lifted.
    func limitInput(to limit: Int?) {
        var layer: Bufferevent? = self
        while let bufferevent = layer {
            bufferevent_setwatermark(bufferevent.raw, Int16(EV_READ), 0, limit ?? 0)
            layer = bufferevent.underlying
        }
    }

    /// Bounds what may wait to be written in every bufferevent below this one (a filter's
    /// socket, TLS's filter): a filter above moves no more bytes down while the one below holds
    /// `limit` or more, so its own output keeps the rest, and its user (evhttp) sees its answer
    /// as written only once it has really gone down. Without it, a filter hands every answer
    /// to the socket's buffer at once, however little the client reads.
    func limitOutputBelow(to limit: Int) {
        var layer = underlying
        while let bufferevent = layer {
            bufferevent_setwatermark(bufferevent.raw, Int16(EV_WRITE), 0, limit)
            layer = bufferevent.underlying
        }
    }

    /// Whether more input may already wait below this bufferevent's buffer: a TLS record
    /// OpenSSL holds but has not returned, or anything in the socket (bytes, the peer's end, an
    /// error), peeked and not read. libevent's OpenSSL bufferevent hands over one record per
    /// read, so a second record sent right behind an answer is still below when the answer ends.
    var mayHaveInputBelow: Bool {
        if let ssl = bufferevent_openssl_get_ssl(raw), SSL_has_pending(ssl) == 1 { return true }
        let fd = bufferevent_getfd(raw)
        return fd >= 0 && Sockets.hasInput(fd)
    }

    /// Stops every callback (before the bufferevent is freed from outside them).
    func clearCallbacks() { bufferevent_setcb(raw, nil, nil, nil, nil) }

    /// Opens its socket and connects it to `address`; false when that failed at once.
    func connect(_ address: inout (storage: sockaddr_storage, length: Int32)) -> Bool {
        withUnsafeMutablePointer(to: &address.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bufferevent_socket_connect(raw, $0, address.length) }
        } == 0
    }

    /// Queues `bytes` for writing.
    func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { bufferevent_write(raw, $0.baseAddress, $0.count) } == 0
    }

    func retain() { bufferevent_incref(raw) }
    func release() { _ = bufferevent_decref(raw) }
    func free() { bufferevent_free(raw) }
    /// Pushes queued output through a filter now.
    func flushWrites() { _ = bufferevent_flush(raw, Int16(EV_WRITE), BEV_NORMAL) }
    /// Stops reading and writing, and disarms its timeouts.
    func quiesce() {
        bufferevent_disable(raw, Int16(EV_READ | EV_WRITE))
        bufferevent_set_timeouts(raw, nil, nil)
    }
    /// Reports a read error to its user (evhttp closes the connection), from the loop's queue.
    func reportError() {
        bufferevent_trigger_event(
            raw, Int16(BEV_EVENT_READING | BEV_EVENT_ERROR), Int32(BEV_TRIG_DEFER_CALLBACKS.rawValue))
    }
}

/// What a bufferevent's event callback reports.
enum BuffereventEvent: Equatable {
    case connected, endOfFile, error, other

    init(_ what: Int16) {
        let bits = Int32(what)
        if bits & Int32(BEV_EVENT_CONNECTED) != 0 {
            self = .connected
        } else if bits & Int32(BEV_EVENT_ERROR) != 0 {
            self = .error
        } else if bits & Int32(BEV_EVENT_EOF) != 0 {
            self = .endOfFile
        } else {
            self = .other
        }
    }
}

/// What a filter callback tells libevent.
enum FilterResult {
    case ok, needMore, error

    fileprivate var libevent: bufferevent_filter_result {
        switch self {
        case .ok: return BEV_OK
        case .needMore: return BEV_NEED_MORE
        case .error: return BEV_ERROR
        }
    }
}
