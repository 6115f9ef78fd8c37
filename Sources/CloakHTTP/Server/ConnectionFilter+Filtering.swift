import COpenSSL
import Foundation

extension ConnectionFilter {
    func input(_ src: EvBuffer, _ dst: EvBuffer) -> FilterResult {
        if state.discarding {
            src.drainAll()
            return .needMore
        }
        switch state.mode {
        case let .awaitingProxyHeader(trusted):
            return readProxyHeader(src, dst, trusted: trusted)
        case .plain:
            dst.append(contentsOf: src)
            return .ok
        case .failed:
            src.drainAll()
            return .error
        case let .granted(session):
            state.mode = .tls(session)
            return input(src, dst)
        case let .tls(session):
            let ssl = session.ssl, scratch = session.scratch
            // Ciphertext into OpenSSL, plaintext out to evhttp.
            while src.count > 0 {
                let n = src.remove(into: scratch, max: Self.chunk)
                guard n > 0 else { break }
                guard BIO_write(SSL_get_rbio(ssl), scratch, Int32(n)) == n else { return fail() }
            }
            var produced = false
            while true {
                let n = SSL_read(ssl, scratch, Int32(Self.chunk))
                if n > 0 {
                    dst.append(scratch, count: Int(n))
                    produced = true
                    continue
                }
                let error = SSL_get_error(ssl, n)
                flushCiphertext(session)
                if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
                if error == SSL_ERROR_ZERO_RETURN { return close() }  // close_notify: the client is done
                return fail()
            }
            if !state.handshakeDone && SSL_is_init_finished(ssl) == 1 {
                state.handshakeDone = true
                if let output = state.filter?.output, output.count > 0 { state.kick?.activate() }
            }
            return produced ? .ok : .needMore
        }
    }

    func output(_ src: EvBuffer, _ dst: EvBuffer) -> FilterResult {
        switch state.mode {
        case .awaitingProxyHeader:
            // Nothing is answered before the header (evhttp has read nothing): keep it queued.
            return .needMore
        case .plain, .granted:
            // The CONNECT's answer (and anything before it) leaves as it is.
            deliver(src, dst)
            return .ok
        case .failed:
            src.drainAll()
            return .error
        case let .tls(session):
            guard state.handshakeDone else { return .needMore }
            let ssl = session.ssl, scratch = session.scratch
            while src.count > 0 {
                let n = src.copy(into: scratch, max: Self.chunk)
                guard n > 0 else { break }
                let written = SSL_write(ssl, scratch, Int32(n))
                guard written > 0 else { return fail() }
                src.drain(Int(written))
                flushCiphertext(session, into: dst)
            }
            return .ok
        }
    }

    /// Moves what OpenSSL wrote (handshake records, alerts, data) to the socket.
    private func flushCiphertext(_ session: Session, into dst: EvBuffer? = nil) {
        let ciphertext = session.ciphertext, scratch = session.scratch
        guard let wbio = SSL_get_wbio(session.ssl) else { return }
        while BIO_ctrl_pending(wbio) > 0 {
            let n = BIO_read(wbio, scratch, Int32(Self.chunk))
            guard n > 0 else { break }
            ciphertext.append(scratch, count: Int(n))
        }
        if let target = dst ?? state.filter?.underlying?.output {
            deliver(ciphertext, target)
        } else {
            ciphertext.drainAll()
        }
    }

    /// Hands bytes to the socket. A filter's write callback fires once its bytes are in the
    /// socket bufferevent's buffer, not in the kernel, and evhttp frees a connection it closes
    /// right then (after a `shutdown`): bytes still in that buffer would be lost. So bytes are
    /// written to the socket at once when nothing is queued before them, and only what the kernel
    /// does not take waits in the socket bufferevent.
    private func deliver(_ bytes: EvBuffer, _ dst: EvBuffer) {
        if dst.count == 0, let socket = state.filter?.underlying {
            let fd = socket.fd
            if fd >= 0 {
                while bytes.count > 0, bytes.write(to: fd) > 0 {}
            }
        }
        dst.append(contentsOf: bytes)
    }

    private func fail() -> FilterResult {
        if case let .tls(session) = state.mode { flushCiphertext(session) }  // the alert, if any
        state.mode = .failed  // the session is freed with its last reference
        ERR_clear_error()
        return close()
    }

    /// libevent 2.1's filter ignores BEV_ERROR from an input filter: evhttp is told with an error
    /// event instead, deferred (it frees the connection, which must not happen inside this callback).
    func close() -> FilterResult {
        state.filter?.reportError()
        return .error
    }
}
