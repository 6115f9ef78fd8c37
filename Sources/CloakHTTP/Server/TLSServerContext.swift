import COpenSSL

/// The server's TLS context: TLS 1.2 or later, the certificate chain and key from PEM files.
/// Each accepted connection gets its own `SSL` from it.
final class TLSServerContext: @unchecked Sendable {
    // The SSL_CTX is configured once here and only read afterwards (SSL_new is thread-safe).
    let context: OpaquePointer

    init(certificateChain: String, privateKey: String) throws(HTTPServerError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw HTTPServerError("cannot create a TLS context") }
        context = ctx
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateChain) == 1 else {
            ERR_clear_error()
            throw HTTPServerError("cannot load the TLS certificate chain from \(certificateChain)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, privateKey, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            throw HTTPServerError("cannot load a private key matching the certificate from \(privateKey)")
        }
    }

    deinit { SSL_CTX_free(context) }
}
