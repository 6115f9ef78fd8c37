import COpenSSL

/// One client `SSL_CTX`: TLS 1.2 or later, peer verification against the system store or a CA
/// file. Each TCP connection gets its own `SSL` from it (a used one cannot start another
/// session).
package final class TLSClientContext {
    let context: OpaquePointer

    init(caFile: String?, clientCertificate: UpstreamRequest.ClientCertificate? = nil) throws(UpstreamError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .unreachable("cannot create a TLS context") }
        context = ctx
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // A renegotiation an upstream asks for mid-answer is refused, as the server side does.
        _ = SSL_CTX_set_options(ctx, UInt64(1) << 30)  // SSL_OP_NO_RENEGOTIATION (a macro Swift cannot import)
        // an encrypted client key is refused, never prompted for
        SSL_CTX_set_default_passwd_cb(ctx) { _, _, _, _ in 0 }
        let loaded = caFile.map { SSL_CTX_load_verify_locations(ctx, $0, nil) } ?? SSL_CTX_set_default_verify_paths(ctx)
        guard loaded == 1 else {
            ERR_clear_error()
            throw .unreachable(Self.trustedCertificatesUnusable)
        }
        if let client = clientCertificate {
            guard SSL_CTX_use_certificate_chain_file(ctx, client.certificateChain) == 1,
                SSL_CTX_use_PrivateKey_file(ctx, client.privateKey, SSL_FILETYPE_PEM) == 1,
                SSL_CTX_check_private_key(ctx) == 1
            else {
                ERR_clear_error()
                throw .unreachable(Self.clientCertificateUnusable)
            }
        }
    }

    deinit { SSL_CTX_free(context) }

    // What a caller's 502 says: no path of the server's files.
    package static let trustedCertificatesUnusable = "cannot load the trusted certificates"
    package static let clientCertificateUnusable = "cannot load the client certificate and its key"

    /// Why OpenSSL cannot make a context from these files (a CA file that is not PEM, a key that
    /// is not the certificate's), or nil: the configuration's check, so that a route that could
    /// never connect is refused at load rather than by every request.
    package static func problem(
        caFile: String?, clientCertificate: UpstreamRequest.ClientCertificate? = nil
    ) -> String? {
        do throws(UpstreamError) {
            _ = try TLSClientContext(caFile: caFile, clientCertificate: clientCertificate)
            return nil
        } catch {
            guard case let .unreachable(why) = error else { return error.description }
            return why
        }
    }

    /// A new `SSL` for one connection to `host`: SNI and hostname verification set.
    func makeSSL(host: String) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        // The name (or address) the certificate must match: a session that could not be told
        // is not made (it would accept any certificate a trusted CA signed).
        let checked: Bool
        if !AddressPolicy.isLiteral(host) {
            _ = host.withCString {
                SSL_ctrl(
                    ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name),
                    UnsafeMutableRawPointer(mutating: $0))
            }
            checked = SSL_set1_host(ssl, host) == 1
        } else {
            checked = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
        }
        guard checked else {
            ERR_clear_error()
            SSL_free(ssl)
            return nil
        }
        return ssl
    }
}
