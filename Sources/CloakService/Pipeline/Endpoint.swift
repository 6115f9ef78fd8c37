import CloakCore
import CloakHTTP
import CloakJobs
import CloakVault

/// One endpoint of the API listener, declared once (``Endpoint/api``): where it is, who may
/// call it, how its caller is counted, what it audits, and its handler. The steps read the
/// declaration (``ScopeMiddleware`` refuses a caller its ``access`` does not admit before the
/// handler runs; ``RateLimitMiddleware`` counts by ``rate``; ``AuditMiddleware`` writes the
/// handler's ``Outcome`` under ``audit``); ``APIHandler`` only calls ``handler``.
///
/// A class: the router hands the same declaration to every request (one retain, no copy).
final class Endpoint: Sendable {
    /// Who may call an endpoint. There is no default: a declaration names its access.
    enum Access: Sendable, Equatable {
        /// Anyone (health, scripts, validation).
        case open
        /// A valid token that holds the scope.
        case scope(Scope)
        /// A valid token that holds any of the scopes (the handler decides what each may see).
        case anyScope([Scope])
        /// Anyone when `auth.open_tokenize` is on (the SDK's tokenize), else `aliases:create`.
        case tokenize
        /// `egress:<route>` (the path's `{route}`) or `egress:*`, from `Proxy-Authorization`;
        /// without credentials 407.
        case egressRoute
        /// A signed reveal session the handler opens (Elements' frame, apps): no token; the
        /// session names the token that minted it, and that token's scope is checked per reveal.
        case session
    }

    /// How a request is counted against the request rates (``RequestRates``).
    enum RateClass: Sendable, Equatable {
        /// Never counted: health probes (a balancer must not take a node out because of its own
        /// checks) and Elements' static scripts (a checkout page loads several).
        case exempt
        /// The token's bucket, else the address's.
        case caller
        /// An open endpoint: a token without `aliases:create` counts as no token at all, and takes
        /// from its address's bucket.
        case creator
        /// As ``creator``, but a token with `aliases:reveal` keeps its own bucket too (an inbound
        /// route's reveal needs the token's own scope).
        case creatorOrRevealer
    }

    /// Where the caller's credentials are.
    enum Credentials: Sendable, Equatable {
        /// `Authorization: Bearer`.
        case authorization
        /// `Proxy-Authorization` (an egress door's `Authorization` belongs to the upstream).
        case proxyAuthorization
    }

    /// How the server reads an endpoint's body, asked once on a request's head (before any of
    /// the body is read).
    enum BodyReading: Sendable {
        /// Whole, within `server.max_body_bytes` (every endpoint that does not say otherwise).
        case whole
        /// Streamed to the handler when `limit` gives a limit for the request's parameters
        /// (nil: read whole); a body over the limit is refused 413.
        case streamed(limit: @Sendable (CloakService, RouteParameters) -> Int?)

        /// An import's file (issue 60): always streamed, up to `jobs.max_input_mib`.
        static let jobInput = BodyReading.streamed { service, _ in service.configuration.jobs.maxInputMiB << 20 }

        /// A form's submission: streamed when the form has file fields, up to what its rules
        /// allow (``CloakService/uploadLimit(_:textBytes:)``).
        static let formUpload = BodyReading.streamed { service, parameters in
            guard let name = parameters["form"], let form = service.configuration.forms[name], form.hasFileFields
            else { return nil }
            return CloakService.uploadLimit(form, textBytes: service.configuration.server.maxBodyBytes)
        }
    }

    typealias Handler = @Sendable (CloakService, RequestContext) throws(CloakError) -> Reply

    /// A short stable name (tests, documentation).
    let name: String
    let methods: [HTTPMethod]
    let templates: [String]
    let access: Access
    let rate: RateClass
    /// The audit action of the lines the handler's outcome becomes; nil: not audited.
    let audit: AuditAction?
    let credentials: Credentials
    let body: BodyReading
    let handler: Handler
    /// Whether the handler judges a token's access policies (issue 77) on each value it shows
    /// or uses. A token that names policies is refused every other endpoint (deny by default)
    /// until its handler judges them too (``ScopeMiddleware``).
    let judgesPolicies: Bool
    /// `POST /aliases`: a traced request's span name, made once for an endpoint of one method
    /// and one template (nil otherwise: the span names its method and template itself).
    let spanName: String?

    init(
        _ name: String, _ methods: [HTTPMethod], _ templates: [String], access: Access, rate: RateClass,
        audit: AuditAction? = nil, credentials: Credentials = .authorization, body: BodyReading = .whole,
        judgesPolicies: Bool = false, handler: @escaping Handler
    ) {
        self.name = name
        self.judgesPolicies = judgesPolicies
        self.methods = methods
        self.templates = templates
        self.access = access
        self.rate = rate
        self.audit = audit
        self.credentials = credentials
        self.body = body
        self.handler = handler
        self.spanName = methods.count == 1 && templates.count == 1 ? methods[0].rawValue + " " + templates[0] : nil
    }

    convenience init(
        _ name: String, _ method: HTTPMethod, _ template: String, access: Access, rate: RateClass,
        audit: AuditAction? = nil, body: BodyReading = .whole, judgesPolicies: Bool = false,
        handler: @escaping Handler
    ) {
        self.init(
            name, [method], [template], access: access, rate: rate, audit: audit, body: body,
            judgesPolicies: judgesPolicies, handler: handler)
    }

    /// The scope a token needs, when ``access`` names one.
    var scope: Scope? {
        if case let .scope(scope) = access { return scope }
        return nil
    }
}

extension Endpoint: Equatable {
    static func == (a: Endpoint, b: Endpoint) -> Bool { a === b }
}

extension Endpoint: CustomStringConvertible {
    var description: String { name }
}
