import CloakCore
import CloakHTTP

/// Names the client: behind trusted proxies, the address their `Forwarded` / `X-Forwarded-For`
/// header names (``ForwardedClient``). Rate limits, audit lines and the access log use it from
/// here on.
struct ClientAddressMiddleware: Middleware {
    let trusted: TrustedProxies
    let header: ForwardedClient.Header

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard !trusted.isEmpty, context.request.forwardingTrusted else { return nil }
        let forwarded = ForwardedClient.resolve(
            peer: context.request.remoteAddress, headers: context.request.headers,
            trusted: trusted, header: header)
        if let problem = forwarded.problem { ConnectionNotices.shared.report("forwarded_header_\(problem.rawValue)") }
        context.request.remoteAddress = forwarded.address
        return nil
    }
}
