import COpenSSL
import Glibc

/// The byte stream under one accepted connection: a non-blocking socket driven by two loop
/// events, as the client's transports are, in plain text or TLS. Loop thread only.
///
/// Nothing is read while reading is paused (``pauseReading()``): pipelined requests wait in the
/// socket, and TCP holds the client back, while the connection waits for an answer. Writing sends at once and keeps only what the socket
/// does not take.
///
/// TLS runs on memory BIOs: ciphertext is read from the socket and given to OpenSSL, and what
/// OpenSSL writes is sent. So TLS can start after bytes were already read in plain text: after a
/// PROXY protocol header, or after a CONNECT's answer on the forward-proxy door
/// (``startTLS(_:)``), and every plaintext byte is handed out at once (none is left inside
/// OpenSSL while the socket is quiet).
///
/// The transport reports to its ``ServerTransportOwner`` from its own events only, never from
/// inside one of the owner's calls.
final class ServerTransport {
    private unowned let owner: any ServerTransportOwner
    let fd: Int32
    private var reading: LoopEvent?
    private var writing: LoopEvent?
    /// Whether the owner reads now.
    private var readingEnabled = false
    /// Whether the read event is registered with epoll. A pause only clears ``readingEnabled``;
    /// the event is removed when it fires while paused (bytes arrived: a pipelining client), so a
    /// request answered later costs no `epoll_ctl` at all unless its client sends meanwhile.
    private var readRegistered = false
    private var tls: TLSSession?
    /// Bytes the socket has not taken yet (ciphertext under TLS).
    @exclusivity(unchecked) private var pending: [UInt8] = []
    private var pendingOffset = 0
    /// After ``closeWhenSent()``: the sending side ends once `pending` is empty, then input is
    /// read and dropped until the peer closes (a lingering close: the peer reads the whole answer
    /// instead of a reset).
    private var closing = false
    /// Whether ``closeWhenSent()`` was called.
    var isClosing: Bool { closing }
    private var sendingShutDown = false
    private(set) var isClosed = false
    /// Where reads land: the loop's one buffer (``ReadBuffer``), lent for each read: what the
    /// owner keeps of a read it copies before the call returns.
    private let buffer: UnsafeMutableRawBufferPointer
    private let readBuffer: ReadBuffer

    static let readSize = 16 << 10

    init?(fd: Int32, base: EventBase, buffer: ReadBuffer, owner: any ServerTransportOwner) {
        self.fd = fd
        self.owner = owner
        self.buffer = buffer.bytes
        self.readBuffer = buffer
        let context = CallbackContext.unretained(self)
        guard
            let reading = LoopEvent.socket(
                base, fd, readable: true,
                { _, _, arg in
                    let transport: ServerTransport = CallbackContext.object(arg!)
                    transport.readable()
                }, context),
            let writing = LoopEvent.socket(
                base, fd, readable: false,
                { _, _, arg in
                    let transport: ServerTransport = CallbackContext.object(arg!)
                    transport.writable()
                }, context)
        else {
            return nil  // deinit closes the socket: the transport owns it from here
        }
        self.reading = reading
        self.writing = writing
    }

    deinit { close() }

    // MARK: The owner's calls

    /// Starts (or resumes) reading. Bytes waiting in the socket fire the read event (epoll is
    /// level-triggered); plaintext OpenSSL already holds does not, so the event is made active
    /// for it (no `recv` that would only say "nothing").
    func resumeReading() {
        guard !isClosed, !readingEnabled else { return }
        readingEnabled = true
        register()
        if let tls, tls.hasBuffered { reading?.activate() }
    }

    func pauseReading() {
        guard readingEnabled, !closing else { return }
        readingEnabled = false
    }

    private func register() {
        guard !readRegistered else { return }
        readRegistered = true
        reading?.add()
    }

    /// Reads again on the next loop turn, whatever is waiting (bytes given to ``startTLS(_:initial:)``
    /// from inside a read are decrypted then).
    func readSoon() {
        guard !isClosed else { return }
        readingEnabled = true
        register()
        reading?.activate()
    }

    /// Starts TLS: the next bytes read are the client's handshake, and `initial` (bytes already
    /// read in plain text past what was consumed) comes first. False when no session could be
    /// made.
    func startTLS(_ context: TLSServerContext, initial: UnsafeRawBufferPointer = .init(start: nil, count: 0)) -> Bool {
        guard tls == nil, let session = TLSSession(context: context.context) else { return false }
        tls = session
        if initial.count > 0 {
            guard session.feed(initial) else { return false }
        }
        return true
    }

    /// Sends `bytes` (plain text; encrypted under TLS). False when the connection is broken.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        guard !isClosed, !closing else { return false }
        if let tls {
            guard tls.encrypt(bytes) else { return false }
            tls.drainCiphertext(into: &pending, offset: &pendingOffset)
            return flush()
        }
        if pendingOffset == pending.count {
            let sent = bytes.withUnsafeBytes { Sockets.send(fd, $0) }
            if sent == bytes.count { return true }
            guard sent >= 0 || Sockets.wouldBlock else { return false }
            pending = bytes
            pendingOffset = max(sent, 0)
            writing?.add()
            return true
        }
        pending.removeFirst(pendingOffset)
        pendingOffset = 0
        pending += bytes
        return true
    }

    /// Whether part of what was sent has not left for the kernel yet.
    var isSending: Bool { pendingOffset < pending.count }
    /// How many bytes of what was sent have not left for the kernel yet.
    var unsent: Int { pending.count - pendingOffset }

    /// Ends the connection gracefully: what was sent leaves (a TLS close_notify after it), then
    /// the sending side is shut, and whatever the client still sends is read and dropped until it
    /// closes (the owner's deadline bounds the wait). Reported through ``ServerTransportOwner/transportClosed()``.
    func closeWhenSent() {
        guard !isClosed, !closing else { return }
        closing = true
        if let tls {
            tls.shutdown()
            tls.drainCiphertext(into: &pending, offset: &pendingOffset)
        }
        readingEnabled = true
        register()
        if !isSending { shutDownSending() } else { writing?.add() }
    }

    /// Closes the socket now; no report follows.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        reading?.free()
        reading = nil
        writing?.free()
        writing = nil
        tls = nil
        Glibc.close(fd)
    }

    // MARK: The loop's events

    private func writable() {
        guard !isClosed else { return }
        guard flush() else { return fail() }
        if !isSending {
            if closing {
                shutDownSending()
            } else {
                owner.transportSent()
            }
        }
    }

    /// Sends what the socket takes; false when the connection is broken.
    private func flush() -> Bool {
        while pendingOffset < pending.count {
            let sent = pending.withUnsafeBytes {
                Sockets.send(fd, UnsafeRawBufferPointer(rebasing: $0[pendingOffset...]))
            }
            if sent > 0 {
                pendingOffset += sent
                continue
            }
            guard sent < 0, Sockets.wouldBlock else { return false }
            writing?.add()
            return true
        }
        pending.removeAll(keepingCapacity: pending.capacity <= 64 << 10)
        pendingOffset = 0
        return true
    }

    private func shutDownSending() {
        guard !sendingShutDown else { return }
        sendingShutDown = true
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    private func readable() {
        guard !isClosed else { return }
        guard readingEnabled else {
            // Bytes while paused: they wait in the socket, and the event goes until the owner
            // reads again (level-triggered, it would fire on every turn).
            readRegistered = false
            reading?.cancel()
            return
        }
        // Under TLS, what OpenSSL already holds goes first: the socket is read only once the
        // memory BIO is down to less than one record. Reading on regardless would add 16 KiB of
        // ciphertext per resume while a pipelining client's small records are answered one at a
        // time (issue 55, item 1), and the BIO would grow without bound.
        if let tls, !closing, tls.hasBuffered, deliverPlaintext(tls) != .wantsMore { return }
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n == 0 { return fail() }
        if n < 0 {
            if Sockets.wouldBlock || errno == EINTR { return }
            return fail()
        }
        if closing { return }  // a lingering close drops what the client still sends
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<n])
        guard let tls else { return owner.transportReceived(bytes) }
        guard tls.feed(bytes) else { return failTLS(tls) }
        deliverPlaintext(tls)
    }

    /// Why ``deliverPlaintext(_:)`` stopped.
    private enum Delivery {
        /// OpenSSL holds less than one record: the socket may be read.
        case wantsMore
        /// The owner paused reading (or closed the connection); the rest waits in OpenSSL.
        case paused
        /// The session ended or failed: the connection is closed.
        case ended
    }

    /// Hands out the plaintext OpenSSL has, while the owner reads; sends the records OpenSSL
    /// wrote meanwhile (handshake, alerts, session tickets).
    @discardableResult
    private func deliverPlaintext(_ tls: TLSSession) -> Delivery {
        while readingEnabled && !isClosed {
            switch tls.decrypt(into: buffer) {
            case .bytes(let n):
                owner.transportReceived(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            case .wantMore:
                tls.drainCiphertext(into: &pending, offset: &pendingOffset)
                if !flush() {
                    fail()
                    return .ended
                }
                return .wantsMore
            case .closed:
                // close_notify: the client is done sending.
                tls.drainCiphertext(into: &pending, offset: &pendingOffset)
                _ = flush()
                fail()
                return .ended
            case .failed:
                failTLS(tls)
                return .ended
            }
        }
        return isClosed ? .ended : .paused
    }

    private func failTLS(_ tls: TLSSession) {
        tls.drainCiphertext(into: &pending, offset: &pendingOffset)  // the alert, if any
        _ = flush()
        fail()
    }

    private func fail() {
        close()
        owner.transportClosed()
    }
}

/// One loop's read buffer, shared by its connections' transports: a read is handed to its owner
/// and done with before the next one, so ten thousand idle connections hold no 16 KiB each.
final class ReadBuffer {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: ServerTransport.readSize, alignment: 16)
    deinit { bytes.deallocate() }
}

/// What a ``ServerTransport`` reports.
protocol ServerTransportOwner: AnyObject {
    /// Bytes arrived (plaintext), lent for the call.
    func transportReceived(_ bytes: UnsafeRawBufferPointer)
    /// Everything sent so far has left for the kernel (reported only after a send that had to
    /// wait for the socket).
    func transportSent()
    /// The peer closed, the connection failed, or a lingering close ended: the socket is closed.
    func transportClosed()
}

/// One connection's server-side TLS on memory BIOs.
final class TLSSession {
    let ssl: OpaquePointer

    enum Decrypted {
        case bytes(Int)
        case wantMore
        case closed
        case failed
    }

    init?(context: OpaquePointer) {
        guard let ssl = SSL_new(context) else { return nil }
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            return nil
        }
        // An empty memory BIO says "retry", not "end of stream".
        _ = BIO_ctrl(rbio, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, rbio, wbio)
        SSL_set_accept_state(ssl)
        self.ssl = ssl
    }

    deinit { SSL_free(ssl) }

    /// Whether OpenSSL holds bytes not handed out yet (a decrypted record, or ciphertext read).
    var hasBuffered: Bool { SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0 }

    /// Gives OpenSSL ciphertext read from the socket.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count > 0 else { return true }
        return BIO_write(SSL_get_rbio(ssl), bytes.baseAddress, Int32(bytes.count)) == Int32(bytes.count)
    }

    /// Plaintext into `buffer` (the handshake advances on the way).
    func decrypt(into buffer: UnsafeMutableRawBufferPointer) -> Decrypted {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if n > 0 { return .bytes(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantMore
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            ERR_clear_error()
            return .failed
        }
    }

    /// Encrypts plaintext into records (in the write BIO).
    func encrypt(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let n = bytes.withUnsafeBytes {
                SSL_write(ssl, $0.baseAddress! + offset, Int32(clamping: $0.count - offset))
            }
            guard n > 0 else {
                ERR_clear_error()
                return false
            }
            offset += Int(n)
        }
        return true
    }

    /// Sends close_notify.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Moves the records OpenSSL wrote to the end of `pending`.
    func drainCiphertext(into pending: inout [UInt8], offset: inout Int) {
        guard let wbio = SSL_get_wbio(ssl) else { return }
        let waiting = Int(BIO_ctrl_pending(wbio))
        guard waiting > 0 else { return }
        if offset > 0 {
            pending.removeFirst(offset)
            offset = 0
        }
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: waiting))
        let read = pending.withUnsafeMutableBytes { BIO_read(wbio, $0.baseAddress! + start, Int32(waiting)) }
        pending.removeLast(waiting - Int(max(read, 0)))
    }
}
