import Glibc

/// The byte stream under every connection, server's and client's (issue 58): a non-blocking
/// socket driven by two loop events, the bytes the socket has not taken yet, the loop's one read
/// buffer, and, for TLS, a ``TLSSession`` on memory BIOs. Loop thread only.
///
/// - Reading is an event that is there or not (``pauseReading()``): a server connection waiting
///   for an answer leaves pipelined requests in the socket, where TCP holds the client back. A
///   pause only clears a flag; the event goes when it fires while paused, so a request answered
///   later costs no `epoll_ctl` unless its client sent meanwhile.
/// - Under TLS the socket is read only when the session needs bytes: what OpenSSL holds is
///   handed out first, and a resume with plaintext waiting makes the read event active rather
///   than read (issue 55, item 1: reading on regardless grew the BIO under small records).
/// - Writing sends at once and keeps only what the socket does not take.
/// - A client stream connects (``connect(to:port:base:buffer:tls:owner:)``), reports the connect
///   (and handshake) from its write event, and, on a reused connection, refuses a write when
///   anything waits to be read and notes bytes that arrived before its last write
///   (``ArrivalCheck``).
///
/// Loop thread only, and reached only from its own events and its owner's calls there: its
/// fields skip the runtime's exclusivity checks (`@exclusivity(unchecked)`).
///
/// It reports to its ``SocketStreamOwner`` from its own events only, never from inside one of
/// the owner's calls. The TLS half of reading (handshake, plaintext handed out) is in
/// `SocketStream+TLS`; fields are changed only by these two files.
final class SocketStream {
    unowned let owner: any SocketStreamOwner
    @exclusivity(unchecked) private var fd: Int32
    @exclusivity(unchecked) private var reading: LoopEvent?
    @exclusivity(unchecked) private var writing: LoopEvent?
    @exclusivity(unchecked) var readingEnabled = false
    @exclusivity(unchecked) private var readRegistered = false
    @exclusivity(unchecked) var tls: TLSSession?
    /// Bytes the socket has not taken yet (ciphertext under TLS).
    @exclusivity(unchecked) var pending: [UInt8] = []
    @exclusivity(unchecked) var pendingOffset = 0
    /// A client's plaintext written before its handshake ended.
    @exclusivity(unchecked) var beforeHandshake: [UInt8] = []
    /// A client's connect is under way (reported from the write event).
    @exclusivity(unchecked) var connecting = false
    @exclusivity(unchecked) private var arrival = ArrivalCheck()
    /// After ``closeWhenSent()``: the sending side ends once `pending` is empty, then input is
    /// read and dropped until the peer closes.
    @exclusivity(unchecked) private(set) var isClosing = false
    @exclusivity(unchecked) private var sendingShutDown = false
    @exclusivity(unchecked) private(set) var isClosed = false
    /// The loop's read buffer, lent for each read: what the owner keeps it copies in the call.
    let buffer: UnsafeMutableRawBufferPointer
    private let readBuffer: ReadBuffer

    /// An accepted socket (the stream owns it from here: a failed init closes it).
    init?(fd: Int32, base: EventBase, buffer: ReadBuffer, owner: any SocketStreamOwner) {
        self.fd = fd
        self.owner = owner
        self.buffer = buffer.bytes
        self.readBuffer = buffer
        guard makeEvents(base) else { return nil }
    }

    /// A connection to `address` (numeric) and `port`, TLS when `tls` is given; nil when the
    /// socket could not be opened.
    static func connect(
        to address: String, port: Int, base: EventBase, buffer: ReadBuffer, tls: TLSSession?,
        owner: any SocketStreamOwner
    ) -> SocketStream? {
        guard let opened = Sockets.connecting(to: address, port: port),
            let stream = SocketStream(fd: opened.fd, base: base, buffer: buffer, owner: owner)
        else { return nil }
        stream.tls = tls
        // The connect's end is reported from the write event, on a later turn (also when it
        // ended at once): the owner is never re-entered from its own call.
        stream.connecting = true
        stream.writing?.add()
        stream.resumeReading()
        return stream
    }

    private func makeEvents(_ base: EventBase) -> Bool {
        let context = CallbackContext.unretained(self)
        guard
            let reading = LoopEvent.socket(
                base, fd, readable: true,
                { _, _, arg in
                    let stream: SocketStream = CallbackContext.object(arg!)
                    stream.readable()
                }, context),
            let writing = LoopEvent.socket(
                base, fd, readable: false,
                { _, _, arg in
                    let stream: SocketStream = CallbackContext.object(arg!)
                    stream.writable()
                }, context)
        else { return false }
        self.reading = reading
        self.writing = writing
        return true
    }

    deinit { close() }

    // MARK: The owner's calls

    /// Starts (or resumes) reading.
    func resumeReading() {
        guard !isClosed, !readingEnabled else { return }
        readingEnabled = true
        register()
        if let tls, tls.hasBuffered { reading?.activate() }
    }

    func pauseReading() {
        guard readingEnabled, !isClosing else { return }
        readingEnabled = false
    }

    private func register() {
        guard !readRegistered else { return }
        readRegistered = true
        reading?.add()
    }

    /// Reads again on the next loop turn, whatever is waiting (bytes given to
    /// ``startTLS(_:initial:)`` from inside a read are decrypted then).
    func readSoon() {
        guard !isClosed else { return }
        readingEnabled = true
        register()
        reading?.activate()
    }

    /// Starts TLS on an accepted connection: the next bytes read are the client's handshake,
    /// and `initial` (bytes read in plain text past what was consumed) comes first. False when
    /// no session could be made.
    func startTLS(_ context: TLSServerContext, initial: UnsafeRawBufferPointer = .init(start: nil, count: 0)) -> Bool {
        guard tls == nil, let session = TLSSession(server: context) else { return false }
        tls = session
        return session.feed(initial)
    }
    /// Sends `bytes` (plain text; encrypted under TLS). With `unlessInputWaiting` (a client's
    /// request on a reused connection), looks right before the first byte goes out, with no
    /// loop turn between, and writes nothing when anything waits to be read.
    @discardableResult
    func send(_ bytes: [UInt8], unlessInputWaiting: Bool = false) -> SendOutcome {
        guard !isClosed, !isClosing else { return .failed }
        if unlessInputWaiting {
            arrival.watch()
            if tls?.hasBuffered == true || Sockets.hasInput(fd) { return .inputWaiting }
        }
        if let tls {
            guard tls.isHandshakeDone else {
                beforeHandshake += bytes
                return .accepted
            }
            guard tls.encrypt(bytes) else { return .failed }
            tls.drainCiphertext(into: &pending, offset: &pendingOffset)
            return flush() ? .accepted : .failed
        }
        guard !connecting, pendingOffset == pending.count else {
            pending.removeFirst(pendingOffset)
            pendingOffset = 0
            pending += bytes
            return .accepted
        }
        arrival.writing()
        let sent = bytes.withUnsafeBytes { Sockets.send(fd, $0) }
        if sent == bytes.count {
            arrival.written()
            return .accepted
        }
        guard sent >= 0 || Sockets.wouldBlock else { return .failed }
        pending = bytes
        pendingOffset = max(sent, 0)
        writing?.add()
        return .accepted
    }

    /// How many bytes of what was sent have not left for the kernel yet.
    var unsent: Int { pending.count - pendingOffset + beforeHandshake.count }

    /// Ends the connection gracefully: what was sent leaves (a TLS close_notify after it), then
    /// the sending side is shut, and whatever the peer still sends is read and dropped until it
    /// closes (the owner's deadline bounds the wait). Reported through
    /// ``SocketStreamOwner/streamClosed(_:)``.
    func closeWhenSent() {
        guard !isClosed, !isClosing else { return }
        isClosing = true
        if let tls {
            tls.shutdown()
            tls.drainCiphertext(into: &pending, offset: &pendingOffset)
        }
        readingEnabled = true
        register()
        if unsent == 0 { shutDownSending() } else { writing?.add() }
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
        fd = -1
    }

    // MARK: The loop's events

    private func writable() {
        guard !isClosed else { return }
        if connecting {
            let error = Sockets.connectError(fd)
            guard error == 0 else { return fail(String(cString: strerror(error))) }
            connecting = false
            if let tls { return advanceHandshake(tls) }
            owner.streamConnected()
            guard !isClosed else { return }  // the owner closed it
        }
        guard flush() else { return fail(Self.brokenText) }
        if readingEnabled && !readRegistered && unsent <= Self.maxUnsentWhileReading { register() }
        guard unsent == 0 else { return }
        if isClosing { shutDownSending() } else { owner.streamDrained() }
    }

    /// Sends what the socket takes; false when the connection is broken.
    func flush() -> Bool {
        guard pendingOffset < pending.count else { return true }
        arrival.writing()
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
        arrival.written()
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
        if tls != nil && unsent > Self.maxUnsentWhileReading {
            // A TLS peer that sends without reading (records OpenSSL answers, such as key
            // updates) would grow what waits to be sent: the socket is read again once the
            // write event has sent it down.
            readRegistered = false
            reading?.cancel()
            return
        }
        if tls?.hasBuffered != true, arrival.arrivedBeforeTheLastWrite(fd) {
            owner.streamReceivedBeforeWrite()
            guard !isClosed else { return }  // the owner closed it
        }
        if let tls, !isClosing, tls.hasBuffered, deliverPlaintext(tls) != .wantsMore { return }
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n == 0 { return fail(tls == nil || isClosing ? nil : "TLS ended without close_notify") }
        if n < 0 {
            if Sockets.wouldBlock { return }
            return fail(tls == nil ? String(cString: strerror(errno)) : Self.brokenText)
        }
        if isClosing { return }  // a lingering close drops what the peer still sends
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<n])
        guard let tls else { return owner.streamReceived(bytes, more: n == buffer.count) }
        guard tls.feed(bytes) else { return failTLS(tls) }
        if !tls.isHandshakeDone && !connecting {
            advanceHandshake(tls)
            guard !isClosed, tls.isHandshakeDone else { return }
        }
        deliverPlaintext(tls)
    }

    func fail(_ error: String?) {
        close()
        owner.streamClosed(error)
    }
}
