import CloakCore
import CloakHTTP

/// Finds the endpoint for the method and the path as sent (still percent-encoded), and the
/// template that labels the request; a CORS preflight is marked instead (it names no endpoint:
/// ``CORSMiddleware`` answers it). A path that matches nothing is answered by the handler, after
/// the caller was identified and counted.
struct RoutingMiddleware: Middleware {
    let router: Router<Endpoint>

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        if context.request.method == .OPTIONS, context.request.header("Access-Control-Request-Method") != nil {
            context.isPreflight = true
            return nil
        }
        context.route = router.resolve(method: context.request.method, path: context.request.rawPath)
        switch context.route {
        case let .found(_, _, template), let .methodNotAllowed(_, template): context.template = template
        case .notFound: break
        }
        return nil
    }
}
