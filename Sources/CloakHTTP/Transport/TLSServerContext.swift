import COpenSSL

/// A server TLS context: TLS 1.2 or later, a certificate chain and its key. Each accepted
/// connection gets its own `SSL` from it.
public final class TLSServerContext: @unchecked Sendable {
    // The SSL_CTX is configured once here and only read afterwards (SSL_new is thread-safe).
    let context: OpaquePointer

    /// A new server context: TLS 1.2 or later, no renegotiation (a client could otherwise make the
    /// server redo handshakes on one connection).
    private static func makeContext() throws(HTTPServerError) -> OpaquePointer {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw HTTPServerError("cannot create a TLS context") }
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        _ = SSL_CTX_set_options(ctx, UInt64(1) << 30)  // SSL_OP_NO_RENEGOTIATION (a macro Swift cannot import)
        // An encrypted key file is refused, never prompted for on the terminal (OpenSSL's default).
        SSL_CTX_set_default_passwd_cb(ctx) { _, _, _, _ in 0 }
        return ctx
    }

    init(certificateChain: String, privateKey: String) throws(HTTPServerError) {
        let ctx = try Self.makeContext()
        context = ctx
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateChain) == 1 else {
            ERR_clear_error()
            throw HTTPServerError("cannot load the TLS certificate chain from \(certificateChain)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, privateKey, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1
        else {
            ERR_clear_error()
            throw HTTPServerError("cannot load a private key matching the certificate from \(privateKey)")
        }
    }

    /// A context from PEM text held in memory (an egress door's per-host leaf).
    public init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8]) throws(HTTPServerError) {
        let ctx = try Self.makeContext()
        context = ctx
        guard let certificates = Self.readPEM(certificateChainPEM, { PEM_read_bio_X509($0, nil, nil, nil) }),
            !certificates.isEmpty
        else {
            throw HTTPServerError("cannot read the certificate chain")
        }
        defer { certificates.forEach { X509_free($0) } }
        guard SSL_CTX_use_certificate(ctx, certificates[0]) == 1 else {
            throw HTTPServerError("cannot use the certificate")
        }
        for extra in certificates.dropFirst() {
            // SSL_CTX_add_extra_chain_cert takes ownership: hand it its own reference.
            X509_up_ref(extra)
            _ = SSL_CTX_ctrl(ctx, SSL_CTRL_EXTRA_CHAIN_CERT, 0, UnsafeMutableRawPointer(extra))
        }
        guard let keys = Self.readPEM(privateKeyPEM, { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }),
            let key = keys.first
        else {
            throw HTTPServerError("cannot read the private key")
        }
        defer { keys.forEach { EVP_PKEY_free($0) } }
        guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            throw HTTPServerError("the private key does not match the certificate")
        }
    }

    private static func readPEM<T>(_ pem: [UInt8], _ read: (OpaquePointer?) -> T?) -> [T]? {
        let bio = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else { return nil }
        defer { BIO_free(bio) }
        var out: [T] = []
        while let item = read(bio) { out.append(item) }
        ERR_clear_error()  // the read that ends the loop leaves "no start line"
        return out
    }

    deinit { SSL_CTX_free(context) }
}
