import Glibc

/// A plain TCP connection driven by two loop events: reading stays registered for the
/// connection's whole life (no `epoll_ctl` per exchange), and a request is written at once with
/// one `send`; only what the socket does not take waits for the write event.
final class PlainTransport: UpstreamTransport {
    private unowned let owner: any UpstreamTransportOwner
    private let base: EventBase
    private var fd: Int32 = -1
    private var reading: LoopEvent?
    private var writing: LoopEvent?
    private var connected = false
    private var connectReported = false
    /// Bytes not yet taken by the socket (before the connect ends, or after a short send).
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    /// Where reads land: allocated once per connection.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 16)

    init(base: EventBase, owner: any UpstreamTransportOwner) {
        self.base = base
        self.owner = owner
    }

    deinit {
        close()
        buffer.deallocate()
    }

    func connect(to address: String, port: Int) -> Bool {
        guard let opened = Sockets.connecting(to: address, port: port) else { return false }
        fd = opened.fd
        connected = opened.connected
        let context = CallbackContext.unretained(self)
        guard
            let reading = LoopEvent.socket(
                base, fd, readable: true,
                { _, _, arg in
                    let transport: PlainTransport = CallbackContext.object(arg!)
                    transport.readable()
                }, context),
            let writing = LoopEvent.socket(
                base, fd, readable: false,
                { _, _, arg in
                    let transport: PlainTransport = CallbackContext.object(arg!)
                    transport.writable()
                }, context)
        else { return false }
        self.reading = reading
        self.writing = writing
        // The connect's end is reported from the write event, on a later turn (also when it
        // ended at once): the owner is never re-entered from its own call.
        writing.add()
        reading.add()
        return true
    }

    /// Whether what is read next arrived before the request was sent (``ArrivalCheck``).
    private var arrival = ArrivalCheck()

    func write(_ bytes: [UInt8], unlessInputWaiting: Bool) -> UpstreamWriteOutcome {
        guard fd >= 0 else { return .failed }
        if unlessInputWaiting { arrival.watch() }  // a reused connection
        guard connected, pendingOffset == pending.count else {
            if unlessInputWaiting && Sockets.hasInput(fd) { return .inputWaiting }
            pending.removeFirst(pendingOffset)
            pendingOffset = 0
            pending += bytes
            return .accepted
        }
        if unlessInputWaiting && Sockets.hasInput(fd) { return .inputWaiting }
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

    var isWriting: Bool { pendingOffset < pending.count }
    var unsent: Int { pending.count - pendingOffset }

    func close() {
        reading?.free()
        reading = nil
        writing?.free()
        writing = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    private func writable() {
        if !connectReported {
            if !connected {
                let error = Sockets.connectError(fd)
                guard error == 0 else { return fail(String(cString: strerror(error))) }
                connected = true
            }
            connectReported = true
            owner.transportConnected()
            guard fd >= 0 else { return }  // the owner closed it
        }
        guard pendingOffset < pending.count else { return }
        arrival.writing()
        let sent = pending.withUnsafeBytes { Sockets.send(fd, UnsafeRawBufferPointer(rebasing: $0[pendingOffset...])) }
        if sent < 0 {
            guard Sockets.wouldBlock else { return fail(String(cString: strerror(errno))) }
        } else {
            pendingOffset += sent
        }
        if pendingOffset < pending.count {
            writing?.add()
        } else {
            pending = []
            pendingOffset = 0
            arrival.written()
            owner.transportDrained()
        }
    }

    private func readable() {
        if arrival.arrivedBeforeTheLastWrite(fd) {
            owner.transportReceivedBeforeWrite()
            guard fd >= 0 else { return }  // the owner closed it
        }
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n > 0 {
            owner.transportReceived(UnsafeRawBufferPointer(rebasing: buffer[..<n]), more: n == buffer.count)
        } else if n == 0 {
            fail(nil)
        } else if !Sockets.wouldBlock {
            fail(String(cString: strerror(errno)))
        }
    }

    private func fail(_ error: String?) {
        close()
        owner.transportClosed(error)
    }
}
