import CloakCore
import CloakHTTP

/// Deny by default: refuses a caller the routed endpoint's ``Endpoint/Access`` does not admit,
/// before its handler runs (401 1300 without a valid token, 403 1301 without the scope; the
/// egress door 407). A token that names access policies is refused (403 1301) every endpoint
/// that does not judge them (``Endpoint/judgesPolicies``). A request that matched no endpoint
/// passes: the handler answers 404 or 405.
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
        // A token held to access policies (issue 77) reaches only the endpoints that judge them:
        // deny by default, so an endpoint not yet taught about policies is no way around them.
        if let token = identity.token, token.access.isRestricted, !endpoint.judgesPolicies,
            endpoint.access != .open
        {
            throw CloakError(
                .forbidden,
                "this token is held to access policies, which \(endpoint.name) does not apply yet: use a token "
                    + "without policies for it")
        }
        if let action = endpoint.audit {
            context.outcome = Outcome(
                action: action, tokenID: identity.token?.id ?? "-", client: context.request.remoteAddress)
        }
        return nil
    }
}
