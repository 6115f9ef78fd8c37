import COpenSSL
import Glibc

/// A TLS connection driven like ``PlainTransport``: a non-blocking socket with two loop events
/// and OpenSSL on the descriptor itself (no bufferevent), the `SSL` made for the host by
/// ``TLSClientContext`` (SNI, hostname verification).
///
/// Cloak calls `SSL_write` and `SSL_read` itself, so it knows the moment a request has gone
/// into the socket and what was waiting just before: the connection can tell its owner whether
/// bytes arrived ahead of a request (``hasInputWaiting``) right before the request is written,
/// which a buffered TLS layer that writes on a later loop turn cannot (issue 44, defect 0).
final class TLSTransport: UpstreamTransport {
    private unowned let owner: any UpstreamTransportOwner
    private let base: EventBase
    private var ssl: OpaquePointer?
    private var fd: Int32 = -1
    private var reading: LoopEvent?
    private var writing: LoopEvent?
    private var handshakeDone = false
    /// A write that OpenSSL could not finish until the socket is readable (a renegotiation or
    /// key update in progress): retried from the read event.
    private var writeWantsRead = false
    /// A read that OpenSSL could not finish until the socket is writable: retried from the
    /// write event, and read events wait for it (a level-triggered read would spin).
    private var readWantsWrite = false
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 16)
    /// Whether the records read next arrived before the request was sent (``ArrivalCheck``):
    /// the raw socket is looked at, OpenSSL reading one record at a time from it.
    private var arrival = ArrivalCheck()

    /// nil when OpenSSL could not make the connection's objects.
    init?(base: EventBase, tls: TLSClientContext, host: String, owner: any UpstreamTransportOwner) {
        self.base = base
        self.owner = owner
        guard let made = tls.makeSSL(host: host) else { return nil }
        ssl = made
        // A write OpenSSL could only start may be finished from another address (the pending
        // array may move) and in parts.
        _ = SSL_ctrl(
            made, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        SSL_set_connect_state(made)
        ProcessLimits.ignoreBrokenPipes()  // OpenSSL writes with write(2): a reset peer must not end the process
    }

    deinit {
        close()
        buffer.deallocate()
    }

    func connect(to address: String, port: Int) -> Bool {
        guard let ssl, let opened = Sockets.connecting(to: address, port: port) else { return false }
        fd = opened.fd
        guard SSL_set_fd(ssl, fd) == 1 else { return false }
        let context = CallbackContext.unretained(self)
        guard
            let reading = LoopEvent.socket(
                base, fd, readable: true,
                { _, _, arg in
                    let transport: TLSTransport = CallbackContext.object(arg!)
                    transport.readable()
                }, context),
            let writing = LoopEvent.socket(
                base, fd, readable: false,
                { _, _, arg in
                    let transport: TLSTransport = CallbackContext.object(arg!)
                    transport.writable()
                }, context)
        else { return false }
        self.reading = reading
        self.writing = writing
        // The handshake starts from the write event (the connect's end), on a later turn.
        writing.add()
        reading.add()
        return true
    }

    func write(_ bytes: [UInt8], unlessInputWaiting: Bool) -> UpstreamWriteOutcome {
        guard ssl != nil else { return .failed }
        if unlessInputWaiting { arrival.watch() }  // a reused connection
        if unlessInputWaiting && hasInputWaiting { return .inputWaiting }
        pending.removeFirst(pendingOffset)
        pendingOffset = 0
        pending += bytes
        guard handshakeDone else { return .accepted }  // written when the handshake ends
        return flush(reporting: false) ? .accepted : .failed
    }

    var isWriting: Bool { pendingOffset < pending.count }
    var unsent: Int { pending.count - pendingOffset }

    /// Whether reading now would return something (a record OpenSSL holds, bytes, the peer's
    /// end, an error) rather than wait; nothing is consumed.
    private var hasInputWaiting: Bool {
        guard let ssl, fd >= 0 else { return true }
        return SSL_has_pending(ssl) == 1 || Sockets.hasInput(fd)
    }

    func close() {
        reading?.free()
        reading = nil
        writing?.free()
        writing = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    // MARK: The loop's events

    private func writable() {
        guard ssl != nil else { return }
        if !handshakeDone {
            handshake()
            return
        }
        if isWriting {
            guard flush() else { return }
            if !isWriting { owner.transportDrained() }
            guard self.ssl != nil else { return }  // the owner closed it
        }
        if readWantsWrite {
            readWantsWrite = false
            readable()
        }
    }

    private func readable() {
        guard ssl != nil, !readWantsWrite else { return }
        if !handshakeDone { return handshake() }
        if writeWantsRead {
            writeWantsRead = false
            guard flush() else { return }
            if !isWriting { owner.transportDrained() }
            guard self.ssl != nil else { return }  // the owner closed it
        }
        if let ssl, SSL_has_pending(ssl) == 0, arrival.arrivedBeforeTheLastWrite(fd) {
            owner.transportReceivedBeforeWrite()
            guard self.ssl != nil else { return }  // the owner closed it
        }
        while let ssl = self.ssl {
            // A stale entry on the thread's error queue (left by other OpenSSL use on this
            // loop) would turn the next SSL_get_error into a failure.
            ERR_clear_error()
            let n = Int(SSL_read(ssl, buffer.baseAddress, Int32(buffer.count)))
            if n > 0 {
                // More may wait: a record OpenSSL holds, or anything in the socket.
                let more = SSL_has_pending(ssl) == 1 || Sockets.hasInput(fd)
                owner.transportReceived(UnsafeRawBufferPointer(rebasing: buffer[..<n]), more: more)
                continue
            }
            switch SSL_get_error(ssl, Int32(n)) {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                readWantsWrite = true
                writing?.add()
                return
            case SSL_ERROR_ZERO_RETURN:
                return fail(nil)  // close_notify: the peer's own end
            default:
                // A FIN without close_notify (anyone on the path can send one) or a reset.
                let reset = errno == ECONNRESET
                ERR_clear_error()
                return fail(reset ? "connection failed (refused, reset or TLS)" : "TLS ended without close_notify")
            }
        }
    }

    private func handshake() {
        guard let ssl else { return }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeDone = true
            owner.transportConnected()
            guard self.ssl != nil else { return }  // the owner closed it
            if isWriting, flush(), !isWriting { owner.transportDrained() }
            return
        }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ:
            return  // the read event is always on
        case SSL_ERROR_WANT_WRITE:
            writing?.add()
        default:
            ERR_clear_error()
            fail("connection failed (refused, reset or TLS)")
        }
    }

    /// Writes what OpenSSL takes now; false when the connection failed: reported to the owner
    /// when `reporting` (never from inside one of the owner's own calls), else only closed.
    @discardableResult
    private func flush(reporting: Bool = true) -> Bool {
        guard let ssl else { return false }
        while pendingOffset < pending.count {
            ERR_clear_error()
            arrival.writing()
            let n = pending.withUnsafeBytes { bytes in
                Int(
                    SSL_write(
                        ssl, bytes.baseAddress! + pendingOffset,
                        Int32(clamping: bytes.count - pendingOffset)))
            }
            if n > 0 {
                pendingOffset += n
                continue
            }
            switch SSL_get_error(ssl, Int32(n)) {
            case SSL_ERROR_WANT_WRITE:
                writing?.add()
                return true
            case SSL_ERROR_WANT_READ:
                writeWantsRead = true
                return true
            default:
                ERR_clear_error()
                if reporting { fail("connection failed (refused, reset or TLS)") } else { close() }
                return false
            }
        }
        if !pending.isEmpty { arrival.written() }
        pending = []
        pendingOffset = 0
        return true
    }

    private func fail(_ error: String?) {
        close()
        owner.transportClosed(error)
    }
}
