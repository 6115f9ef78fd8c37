import COpenSSL

/// One connection's TLS on memory BIOs, for both ends (issue 58; as swift-nio-ssl has one
/// connection object under its client and server handlers): the ``SocketStream`` reads the
/// socket and gives OpenSSL the ciphertext (``feed(_:)``), takes the plaintext out
/// (``decrypt(into:)``), and sends what OpenSSL wrote (``drainCiphertext(into:offset:)``).
/// OpenSSL never touches the socket, so TLS can start after bytes were read in plain text (a
/// PROXY header, a CONNECT's answer), and the stream knows the moment each byte goes out.
///
/// The one owner of its `SSL` (freed in `deinit`); the context it was made from is kept alive
/// with it.
final class TLSSession {
    private let ssl: OpaquePointer
    /// The context the `SSL` refers to (a server's, a tunnel's leaf, a client's trust).
    private let context: AnyObject

    enum Decrypted {
        case bytes(Int)
        /// Nothing more until more ciphertext comes.
        case wantMore
        /// The peer's close_notify.
        case closed
        case failed
    }

    enum Handshake {
        case done
        case wantMore
        case failed
    }

    /// A session that accepts a client's handshake.
    convenience init?(server context: TLSServerContext) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.init(ssl: ssl, context: context, accepts: true)
    }

    /// A session that connects to `host` (SNI and hostname verification set).
    convenience init?(client context: TLSClientContext, host: String) {
        guard let ssl = context.makeSSL(host: host) else { return nil }
        self.init(ssl: ssl, context: context, accepts: false)
    }

    private init?(ssl: OpaquePointer, context: AnyObject, accepts: Bool) {
        guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            return nil
        }
        // An empty memory BIO says "retry", not "end of stream".
        _ = BIO_ctrl(rbio, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, rbio, wbio)
        if accepts { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        self.ssl = ssl
        self.context = context
    }

    deinit { SSL_free(ssl) }

    var isHandshakeDone: Bool { SSL_is_init_finished(ssl) == 1 }

    /// Whether OpenSSL holds bytes not handed out yet (a decrypted record, or ciphertext fed):
    /// the socket is read only once this is false.
    var hasBuffered: Bool { SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0 }

    /// Gives OpenSSL ciphertext read from the socket.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count > 0 else { return true }
        return BIO_write(SSL_get_rbio(ssl), bytes.baseAddress, Int32(bytes.count)) == Int32(bytes.count)
    }

    /// Advances the handshake with what was fed (a client's first call writes its ClientHello).
    func handshake() -> Handshake {
        // A stale entry on the thread's error queue (left by other OpenSSL use on this loop)
        // would turn the next SSL_get_error into a failure.
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantMore
        default:
            ERR_clear_error()
            return .failed
        }
    }

    /// Plaintext into `buffer` (a server's handshake advances on the way).
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

    /// Encrypts plaintext into records (in the write BIO, which always takes them).
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

    /// Writes close_notify.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Moves the records OpenSSL wrote to the end of `pending` (whose first `offset` bytes have
    /// left already and are dropped).
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
