import CloakCore
import CloakHTTP

/// Deny by default: refuses a caller the routed endpoint's ``Endpoint/Access`` does not admit,
/// before its handler runs (401 1300 without a valid token, 403 1301 without the scope; the
/// egress door 407). A request that matched no endpoint passes: the handler answers 404 or 405.
/// An admitted request to an audited endpoint gets its ``Outcome``.
struct ScopeMiddleware: Middleware {
    /// `auth.open_tokenize`: whether ``Endpoint/Access/tokenize`` admits anyone.
    let openTokenize: Bool

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard let endpoint = context.endpoint else { return nil }
        let identity = context.identity
        switch endpoint.access {
        case .open, .session:
            break
        case let .scope(scope):
            _ = try identity.require(scope)
        case let .anyScope(scopes):
            _ = try identity.requireAny(scopes)
        case .tokenize:
            if !openTokenize { _ = try identity.require(.aliasesCreate) }
        case .egressRoute:
            guard identity.token != nil else {
                let refusal = EgressHandler.proxyAuthenticationRequired(identity)
                context.error = refusal.error
                return refusal.response
            }
            // Before the route is looked up: a token cannot probe route ids (and the text never
            // repeats the path's).
            guard identity.mayUseEgress(context.parameter("route")) else {
                throw CloakError(.forbidden, "the token may not use this egress route")
            }
        }
        if let action = endpoint.audit {
            context.outcome = Outcome(
                action: action, tokenID: identity.token?.id ?? "-", client: context.request.remoteAddress)
        }
        return nil
    }
}
