import CloakCore
import CloakHTTP

/// Takes one request from the caller's bucket (``RequestRates``): past its rate, 429 with
/// `Retry-After`. On an open endpoint a caller without `aliases:create` takes from its address's
/// anonymous bucket, like any anonymous caller.
struct RateLimitMiddleware: Middleware {
    let rates: RequestRates

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        var anonymous = false
        if let endpoint = context.endpoint {
            let identity = context.identity
            anonymous =
                endpoint.isOpen && !identity.isCreator
                // A route's reveal needs the token's own scope: that token keeps its own bucket.
                && !(endpoint == .proxy && identity.token?.scopes.contains("aliases:reveal") == true)
        }
        if context.endpoint?.isRateLimited != false {
            try rates.check(client: context.request.remoteAddress, identity: context.identity, anonymous: anonymous)
        }
        // Admitted: from here on the request is labelled by its route (a 429 is counted under `-`).
        if !context.isPreflight { context.template = context.routeTemplate }
        return nil
    }
}
