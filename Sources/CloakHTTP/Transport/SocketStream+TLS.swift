/// A stream's TLS reading: the handshake moved on by the bytes fed, and the plaintext OpenSSL
/// holds handed out while the owner reads.
extension SocketStream {
    /// Moves the handshake on; once it is done, a client reports the connect and sends what
    /// was written meanwhile.
    func advanceHandshake(_ tls: TLSSession) {
        let state = tls.handshake()
        tls.drainCiphertext(into: &pending, offset: &pendingOffset)
        guard state != .failed else { return failTLS(tls) }
        guard flush() else { return fail(Self.brokenText) }
        guard state == .done else { return }
        owner.streamConnected()
        guard !isClosed, !beforeHandshake.isEmpty else { return }
        let queued = beforeHandshake
        beforeHandshake = []
        guard tls.encrypt(queued) else { return failTLS(tls) }
        tls.drainCiphertext(into: &pending, offset: &pendingOffset)
        guard flush() else { return fail(Self.brokenText) }
        if unsent == 0 { owner.streamDrained() }
    }

    /// Why ``deliverPlaintext(_:)`` stopped.
    enum Delivery {
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
    func deliverPlaintext(_ tls: TLSSession) -> Delivery {
        while readingEnabled && !isClosed {
            switch tls.decrypt(into: buffer) {
            case .bytes(let n):
                owner.streamReceived(UnsafeRawBufferPointer(rebasing: buffer[..<n]), more: tls.hasBuffered)
            case .wantMore:
                tls.drainCiphertext(into: &pending, offset: &pendingOffset)
                guard flush() else {
                    fail(Self.brokenText)
                    return .ended
                }
                return .wantsMore
            case .closed:
                // close_notify: the peer is done sending.
                tls.drainCiphertext(into: &pending, offset: &pendingOffset)
                _ = flush()
                fail(nil)
                return .ended
            case .failed:
                failTLS(tls)
                return .ended
            }
        }
        return isClosed ? .ended : .paused
    }

    func failTLS(_ tls: TLSSession) {
        tls.drainCiphertext(into: &pending, offset: &pendingOffset)  // the alert, if any
        _ = flush()
        fail(Self.brokenText)
    }
}
