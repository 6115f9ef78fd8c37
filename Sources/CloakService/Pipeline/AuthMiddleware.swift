import CloakCore
import CloakHTTP

/// Identifies the caller once (``Identity``). Nothing is refused here: ``ScopeMiddleware``
/// checks what the endpoint's declaration needs.
struct AuthMiddleware: Middleware {
    enum Credentials: Sendable {
        /// `Authorization: Bearer`, except on endpoints whose caller is in `Proxy-Authorization`.
        case api
        /// The forward-proxy door: the token that opened the request's tunnel (authorized once,
        /// at the CONNECT), else `Proxy-Authorization`.
        case forwardProxy
    }

    let authenticator: Authenticator
    let credentials: Credentials

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        let request = context.request
        switch credentials {
        case .api:
            if context.endpoint?.credentials == .proxyAuthorization {
                context.identity = authenticator.identifyProxy(request.header("Proxy-Authorization"))
            } else {
                context.identity = authenticator.identify(request)
            }
        case .forwardProxy:
            if let grant = request.proxyTarget?.tunnelGrant {
                // The token that opened the tunnel, while its secret is the same (``TunnelGrant``).
                let token = TunnelGrant.token(grant, in: authenticator.directory)
                context.identity = Identity(token: token, rejected: token == nil)
            } else {
                context.identity = authenticator.identifyProxy(request.header("Proxy-Authorization"))
            }
        }
        return nil
    }

    /// A 401 says how to authenticate (RFC 9110 11.6.1): `Bearer`, with `error="invalid_token"`
    /// when a token was sent and is not valid (RFC 6750 3). The forward-proxy door answers 407
    /// with `Proxy-Authenticate` instead.
    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard response.status == 401, case .api = credentials,
            context.endpoint?.credentials != .proxyAuthorization,
            !response.headers.contains(where: { $0.name.caseInsensitiveEquals("WWW-Authenticate") })
        else { return }
        response.headers.append(
            ("WWW-Authenticate", context.identity.rejected ? #"Bearer error="invalid_token""# : "Bearer"))
    }
}
