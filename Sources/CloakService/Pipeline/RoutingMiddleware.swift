import CloakCore
import CloakHTTP

/// Finds the endpoint for the method and the path as sent (still percent-encoded); a CORS
/// preflight is marked instead (it names no endpoint: ``CORSMiddleware`` answers it). A path
/// that matches nothing is answered by the handler, after the caller was identified and
/// counted. The route's template labels the request only once it is admitted
/// (``RateLimitMiddleware``): a refused request is counted under `-`.
struct RoutingMiddleware: Middleware {
    let router: Router<Endpoint>

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        if context.request.method == .OPTIONS, context.request.header("Access-Control-Request-Method") != nil {
            context.isPreflight = true
            return nil
        }
        // The server asked the router on the head already (a request with a body): not again.
        if let found = context.request.route as? Router<Endpoint>.Resolution {
            context.route = found
            return nil
        }
        context.route = router.resolve(method: context.request.method, path: context.request.rawPath)
        return nil
    }
}
