import COpenSSL

/// One client `SSL_CTX`: TLS 1.2 or later, peer verification against the system store or a CA
/// file. Each TCP connection gets its own `SSL` from it (a used one cannot start another
/// session).
final class TLSClientContext {
    let context: OpaquePointer

    init(caFile: String?, clientCertificate: UpstreamRequest.ClientCertificate? = nil) throws(UpstreamError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .unreachable("cannot create a TLS context") }
        context = ctx
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // an encrypted client key is refused, never prompted for
        SSL_CTX_set_default_passwd_cb(ctx) { _, _, _, _ in 0 }
        let loaded = caFile.map { SSL_CTX_load_verify_locations(ctx, $0, nil) } ?? SSL_CTX_set_default_verify_paths(ctx)
        guard loaded == 1 else {
            ERR_clear_error()
            throw .unreachable("cannot load the trusted certificates\(caFile.map { " from \($0)" } ?? "")")
        }
        if let client = clientCertificate {
            guard SSL_CTX_use_certificate_chain_file(ctx, client.certificateChain) == 1,
                SSL_CTX_use_PrivateKey_file(ctx, client.privateKey, SSL_FILETYPE_PEM) == 1,
                SSL_CTX_check_private_key(ctx) == 1
            else {
                ERR_clear_error()
                throw .unreachable("cannot load the client certificate \(client.certificateChain) and its key")
            }
        }
    }

    deinit { SSL_CTX_free(context) }

    /// A new `SSL` for one connection to `host`: SNI and hostname verification set.
    func makeSSL(host: String) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        if !AddressPolicy.isLiteral(host) {
            _ = host.withCString {
                SSL_ctrl(
                    ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name),
                    UnsafeMutableRawPointer(mutating: $0))
            }
            _ = SSL_set1_host(ssl, host)
        } else {
            let param = SSL_get0_param(ssl)
            _ = X509_VERIFY_PARAM_set1_ip_asc(param, host)
        }
        return ssl
    }
}
