import CloakCore
import CloakHTTP

/// Cross-origin calls from the origins in `cors.allowed_origins`: answers their preflights
/// (after the caller was counted) and names the origin on every answer to them.
struct CORSMiddleware: Middleware {
    let allowedOrigins: [String]

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard context.isPreflight else { return nil }
        context.template = "OPTIONS *"
        guard allowedOrigin(context.request) != nil else { throw CloakError(.forbidden, "origin not allowed") }
        return HTTPResponse(
            status: 204,
            headers: [
                ("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"),
                ("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Route-Id, X-Request-Id"),
                ("Access-Control-Max-Age", "600"),
            ])
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard let origin = allowedOrigin(context.request) else { return }
        // An answer that names its readers already (Elements' assets and schemas: `*`) keeps
        // its own: a second Access-Control-Allow-Origin makes browsers refuse the answer.
        guard !response.headers.contains(where: { $0.name.caseInsensitiveEquals("Access-Control-Allow-Origin") })
        else { return }
        response.headers.append(("Access-Control-Allow-Origin", origin))
        response.headers.append(("Vary", "Origin"))
    }

    private func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard !allowedOrigins.isEmpty, let origin = request.header("Origin"), allowedOrigins.contains(origin) else {
            return nil
        }
        return origin
    }
}
