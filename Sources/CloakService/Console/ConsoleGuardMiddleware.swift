import CloakCore
import CloakCrypto
import CloakHTTP

/// The console listener's gate (docs/console.md). A caller is identified by its session cookie
/// only (an `Authorization` header is not read here): a session that holds becomes an
/// ``Identity`` with the console's scopes of its token, which is looked up again on every
/// request, so a revoked or expired token ends its sessions at once. Every request but a read
/// (GET, HEAD) must come from the console's own page: its `Origin` must be the console's, and,
/// but for the sign-in itself, its `X-Cloak-CSRF` the session's token. On the way back, every
/// answer gets the console's security headers.
struct ConsoleGuardMiddleware: Middleware {
    let sessions: ConsoleSessions
    let directory: TokenDirectory
    /// Whether the listener speaks TLS (its origin's scheme, the cookie's name).
    let tls: Bool

    static let csrfHeader = "X-Cloak-CSRF"

    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        let request = context.request
        let changes = request.method != .GET && request.method != .HEAD
        // Every request names the console's own host (`console.origin`, or its listen address
        // and bound port): a page whose name was rebound to this address (DNS rebinding) sends
        // its own name, and is refused before anything is read (review V, item 9).
        guard let hosts = hosts(), hosts.admits(request.header("Host")) else {
            throw CloakError(.forbidden, "refused: the request is not for the console's host (Host; console.origin)")
        }
        if changes {
            // A browser always sends Origin on a cross-origin request and on every POST,
            // PUT and DELETE; a page of another site cannot make it the console's.
            guard hosts.admitsOrigin(request.header("Origin")) else {
                throw CloakError(.forbidden, "refused: the request does not come from the console's own page (Origin)")
            }
        }
        if let cookie = ConsoleCookie.only(in: request.headers, named: ConsoleCookie.name(tls: tls)),
            let session = sessions.use(cookie)
        {
            guard var token = directory.token(digest: session.tokenDigest) else {
                // Revoked, expired or re-issued since the sign-in: the session ends with it.
                sessions.end(cookie)
                return nil
            }
            // What the token holds now (a reload may have narrowed it), never what it held at
            // the sign-in: the session's scopes, and what a token it creates may hold.
            let holds = token.scopes
            token.scopes = holds.intersection(Scope.console)
            context.identity = Identity(token: token, rejected: false, grantable: holds)
            context.console = (cookie, session)
        }
        if context.endpoint?.name == ConsoleEndpoints.signIn, request.body.count <= 4096,
            let secret = (try? JSONParser().parse(request.body))?["token"]?.stringValue,
            directory.token(digest: Digest.sha256(Array(secret.utf8))) == nil
        {
            // A token made a moment ago (`cloak tokens create`, another node) is not known here
            // until the next reading: the door reads the store once and signs in again.
            context.identity = Identity(token: nil, rejected: true, unknownBearer: true)
        }
        if changes, context.endpoint?.name != ConsoleEndpoints.signIn {
            guard let session = context.console?.session,
                let sent = request.header(Self.csrfHeader),
                constantTimeEquals(Array(sent.utf8), Array(session.csrf.utf8))
            else {
                throw CloakError(.forbidden, "refused: the request lacks the session's CSRF token (\(Self.csrfHeader))")
            }
        }
        return nil
    }

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        response.headers.append(("Content-Security-Policy", contentSecurityPolicy))
        response.headers += Self.securityHeaders
        if !response.headers.contains(where: { $0.name.caseInsensitiveEquals("Cache-Control") }) {
            response.headers.append(("Cache-Control", "no-store"))
        }
    }

    /// The hosts the console answers to, once its listener is bound (nil: not yet, or a
    /// wildcard listener without `console.origin`, which check-config refuses).
    let hosts: @Sendable () -> ConsoleSettings.Hosts?

    /// Where the forms page's preview loads Cloak Elements from (`console.elements_origin`).
    let elementsOrigin: String?

    /// No script but the console's own files (and Elements' loader, for the preview), no inline
    /// script or style, never in a frame; frames only Elements' own.
    var contentSecurityPolicy: String { Self.contentSecurityPolicy(elementsOrigin: elementsOrigin) }

    static func contentSecurityPolicy(elementsOrigin: String?) -> String {
        let elements = elementsOrigin.map { " " + $0 } ?? ""
        return [
            "default-src 'none'", "script-src 'self'" + elements, "style-src 'self'", "img-src 'self'",
            "connect-src 'self'", elementsOrigin.map { "frame-src " + $0 } ?? "frame-src 'none'",
            "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
        ].joined(separator: "; ")
    }

    static let securityHeaders: [(name: String, value: String)] = [
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"), ("Cross-Origin-Resource-Policy", "same-origin"),
    ]
}
