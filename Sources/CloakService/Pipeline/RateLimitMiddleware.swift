import CloakCore
import CloakHTTP

/// Takes one request from the caller's bucket (``RequestRates``): past its rate, 429 with
/// `Retry-After`, by the endpoint's ``Endpoint/RateClass``. On an open endpoint a caller without `aliases:create` takes from its address's
/// anonymous bucket, like any anonymous caller.
struct RateLimitMiddleware: Middleware {
    let rates: RequestRates

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        var anonymous = false
        let rate = context.endpoint?.rate ?? .caller
        let identity = context.identity
        switch rate {
        case .exempt, .caller: break
        case .creator: anonymous = !identity.isCreator
        case .creatorOrRevealer:
            anonymous = !identity.isCreator && identity.token?.scopes.contains(.aliasesReveal) != true
        }
        // Decided by the routed endpoint, never by the decoded path (`/healthz%00x` decodes to
        // `/healthz` and matches nothing: it is counted).
        if rate != .exempt {
            try rates.check(client: context.request.remoteAddress, identity: context.identity, anonymous: anonymous)
        }
        // Admitted: from here on the request is labelled by its route (a 429 is counted under `-`).
        if !context.isPreflight { context.template = context.routeTemplate }
        return nil
    }
}
