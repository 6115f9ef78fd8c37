import CLibevent
import COpenSSL
import Foundation

extension ConnectionFilter {
    func input(_ src: OpaquePointer, _ dst: OpaquePointer) -> bufferevent_filter_result {
        switch mode {
        case let .awaitingProxyHeader(trusted):
            return readProxyHeader(src, dst, trusted: trusted)
        case .plain:
            evbuffer_add_buffer(dst, src)
            return BEV_OK
        case .failed:
            evbuffer_drain(src, evbuffer_get_length(src))
            return BEV_ERROR
        case let .granted(session):
            mode = .tls(session)
            return input(src, dst)
        case let .tls(session):
            let ssl = session.ssl, scratch = session.scratch
            // Ciphertext into OpenSSL, plaintext out to evhttp.
            while evbuffer_get_length(src) > 0 {
                let n = Int(evbuffer_remove(src, scratch, Self.chunk))
                guard n > 0 else { break }
                guard BIO_write(SSL_get_rbio(ssl), scratch, Int32(n)) == n else { return fail() }
            }
            var produced = false
            while true {
                let n = SSL_read(ssl, scratch, Int32(Self.chunk))
                if n > 0 {
                    evbuffer_add(dst, scratch, Int(n))
                    produced = true
                    continue
                }
                let error = SSL_get_error(ssl, n)
                flushCiphertext(session)
                if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
                if error == SSL_ERROR_ZERO_RETURN { return close() }  // close_notify: the client is done
                return fail()
            }
            if !handshakeDone && SSL_is_init_finished(ssl) == 1 {
                handshakeDone = true
                if let filter, let output = bufferevent_get_output(filter), evbuffer_get_length(output) > 0, let kick {
                    event_active(kick, 0, 0)
                }
            }
            return produced ? BEV_OK : BEV_NEED_MORE
        }
    }

    func output(_ src: OpaquePointer, _ dst: OpaquePointer) -> bufferevent_filter_result {
        switch mode {
        case .awaitingProxyHeader:
            // Nothing is answered before the header (evhttp has read nothing): keep it queued.
            return BEV_NEED_MORE
        case .plain, .granted:
            // The CONNECT's answer (and anything before it) leaves as it is.
            deliver(src, dst)
            return BEV_OK
        case .failed:
            evbuffer_drain(src, evbuffer_get_length(src))
            return BEV_ERROR
        case let .tls(session):
            guard handshakeDone else { return BEV_NEED_MORE }
            let ssl = session.ssl, scratch = session.scratch
            while evbuffer_get_length(src) > 0 {
                let n = Int(evbuffer_copyout(src, scratch, Self.chunk))
                guard n > 0 else { break }
                let written = SSL_write(ssl, scratch, Int32(n))
                guard written > 0 else { return fail() }
                evbuffer_drain(src, Int(written))
                flushCiphertext(session, into: dst)
            }
            return BEV_OK
        }
    }

    /// Moves what OpenSSL wrote (handshake records, alerts, data) to the socket.
    private func flushCiphertext(_ session: Session, into dst: OpaquePointer? = nil) {
        let ciphertext = session.ciphertext, scratch = session.scratch
        guard let wbio = SSL_get_wbio(session.ssl) else { return }
        while BIO_ctrl_pending(wbio) > 0 {
            let n = BIO_read(wbio, scratch, Int32(Self.chunk))
            guard n > 0 else { break }
            evbuffer_add(ciphertext, scratch, Int(n))
        }
        if let target = dst ?? filter.flatMap({ bufferevent_get_underlying($0) }).flatMap({ bufferevent_get_output($0) }) {
            deliver(ciphertext, target)
        } else {
            evbuffer_drain(ciphertext, evbuffer_get_length(ciphertext))
        }
    }

    /// Hands bytes to the socket. A filter's write callback fires once its bytes are in the
    /// socket bufferevent's buffer, not in the kernel, and evhttp frees a connection it closes
    /// right then (after a `shutdown`): bytes still in that buffer would be lost. So bytes are
    /// written to the socket at once when nothing is queued before them, and only what the kernel
    /// does not take waits in the socket bufferevent.
    private func deliver(_ bytes: OpaquePointer, _ dst: OpaquePointer) {
        if evbuffer_get_length(dst) == 0, let filter, let socket = bufferevent_get_underlying(filter) {
            let fd = bufferevent_getfd(socket)
            if fd >= 0 {
                while evbuffer_get_length(bytes) > 0, evbuffer_write(bytes, fd) > 0 {}
            }
        }
        evbuffer_add_buffer(dst, bytes)
    }

    private func fail() -> bufferevent_filter_result {
        if case let .tls(session) = mode { flushCiphertext(session) }  // the alert, if any
        mode = .failed  // the session is freed with its last reference
        ERR_clear_error()
        return close()
    }

    /// libevent 2.1's filter ignores BEV_ERROR from an input filter: evhttp is told with an error
    /// event instead, deferred (it frees the connection, which must not happen inside this callback).
    func close() -> bufferevent_filter_result {
        if let filter {
            bufferevent_trigger_event(filter, Int16(BEV_EVENT_READING | BEV_EVENT_ERROR), Int32(BEV_TRIG_DEFER_CALLBACKS.rawValue))
        }
        return BEV_ERROR
    }
}
