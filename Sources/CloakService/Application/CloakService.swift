public import CloakCore
public import CloakHTTP
public import CloakVault
public import CloakCrypto
import Foundation
public import Logging
import Synchronization

/// The service: routes each request to its handler, turns every failure into a VGSError body,
/// and writes one access-log line per request.
///
/// ```swift
/// let configuration = try ServiceConfiguration.load(path: "config/cloak.yaml")
/// let vault = try VaultBootstrap.open(configuration.vault, environment: [:], logger: nil)
/// let service = CloakService(configuration: configuration, vault: vault)
/// let server = try HTTPServer(configuration: configuration.server, deferredHandler: service.handle,
///                             watchdog: service.watchdog)
/// server.start()
/// ```
public final class CloakService: Sendable {
    public let configuration: ServiceConfiguration
    let context: ServiceContext
    private let router: Router<Endpoint>
    let isDraining = Atomic<Bool>(false)
    let accessLog: AccessLog
    let vault: Vault?
    let auth: Authenticator
    private let proxyRoutes: [ProxyHandler.ResolvedRoute]
    let metrics = ServiceMetrics()
    let egressMetrics: EgressMetrics
    /// Signs the forward-proxy door's per-host certificates (nil: no forward door).
    let egressCertificates: EgressCertificates?
    private let rateLimiter = RateLimiter()
    /// Distinct values per token and format-preserving bucket (`limits.bucket_values_per_hour`).
    let guessLimiter = BucketGuessLimiter()
    /// Every loop of this service's servers beats here; `/readyz` fails when one stops.
    public let watchdog = LoopWatchdog()
    /// Signs Cloak Elements' reveal sessions (nil without a vault): derived from the key ring,
    /// so every node that shares it accepts any node's sessions.
    private let elementsSessionKey: HMACKey?

    enum Endpoint: Sendable {
        case healthz, readyz, metrics, validate, formTokens, formAliases, formSend
        case createTokens, createAliases, revealMany, reveal, update, delete, keep, lookup
        case proxy, egress
        case elementsAsset, elementsSchema, elementsReveal, elementsSession
    }

    /// - Parameters:
    ///   - vault: the vault for the alias endpoints (they answer 1500 without one).
    ///   - logSink: where the JSON log lines go (standard output by default; tests capture them).
    ///   - today: the date that decides expiry windows (the system's by default).
    ///   - egressCA: signs the forward-proxy door's certificates (``handleEgress(_:_:)``).
    public init(
        configuration: ServiceConfiguration, vault: Vault? = nil,
        logSink: @escaping LogSink = JSONLogHandler.standardOutput, today: (@Sendable () -> CalendarDate)? = nil,
        egressCA: CertificateAuthority? = nil
    ) {
        self.configuration = configuration
        self.egressMetrics = EgressMetrics(registry: metrics.registry)
        let egressCertificates = egressCA.map {
            EgressCertificates($0, hosts: configuration.egress.routes.map { $0.host.lowercased() })
        }
        self.egressCertificates = egressCertificates
        self.vault = vault
        self.elementsSessionKey = vault?.derivedMAC(purpose: "elements-session")
        self.accessLog = AccessLog(sink: logSink)
        self.auth = Authenticator(tokens: configuration.auth)
        let logger = Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: logSink) }
        self.context = ServiceContext(configuration: configuration, logger: logger, today: today ?? ServiceContext.systemToday)
        ConnectionNotices.shared.setSink { reason in
            logger.warning("client address not taken", metadata: ["reason": .string(reason), "note": "logged once per reason; counted in cloak_client_address_refused_total"])
        }
        for failure in egressCertificates?.failures ?? [] {
            logger.error("cannot make the egress certificate for a route's host; CONNECTs to it are refused",
                         metadata: ["host": .string(failure.host), "error": .string(failure.reason)])
        }
        var router = Router<Endpoint>()
        router.add(.GET, "/healthz", .healthz)
        router.add(.GET, "/readyz", .readyz)
        router.add(.GET, "/metrics", .metrics)
        router.add(.POST, "/forms/{form}/validate", .validate)
        router.add(.POST, "/forms/{form}/tokens", .formTokens)
        router.add(.POST, "/forms/{form}/aliases", .formAliases)
        router.add(.POST, "/forms/{form}/send", .formSend)
        router.add(.POST, "/tokens", .createTokens)
        router.add(.POST, "/aliases", .createAliases)
        router.add(.GET, "/aliases", .revealMany)
        router.add(.POST, "/aliases/keep", .keep)
        router.add(.POST, "/aliases/lookup", .lookup)
        router.add(.GET, "/aliases/{alias}", .reveal)
        router.add(.PUT, "/aliases/{alias}", .update)
        router.add(.DELETE, "/aliases/{alias}", .delete)
        router.add(.GET, "/elements/v1/forms/{form}", .elementsSchema)
        router.add(.GET, "/elements/v1/reveal", .elementsReveal)
        router.add(.GET, Self.elementsAssetTemplate, .elementsAsset)
        router.add(.POST, "/elements/sessions", .elementsSession)
        for method in HTTPMethod.allCases where method != .OPTIONS && method != .CONNECT && method != .TRACE {
            router.add(method, "/proxy/{path...}", .proxy)
            router.add(method, "/egress/{route}", .egress)
            router.add(method, "/egress/{route}/{path...}", .egress)
        }
        self.proxyRoutes = ProxyHandler.resolve(configuration.routes)
        self.router = router
    }

    public var logger: Logger { context.logger }

    /// Marks the service as draining: `/readyz` answers 503 so balancers stop sending traffic.
    public func beginDraining() { isDraining.store(true, ordering: .relaxed) }

    /// The ``HTTPDeferredHandler`` for the server: answers now, or later on the request's loop.
    public func handle(_ received: HTTPRequest, _ responder: HTTPResponder) {
        let start = DispatchTime.now().uptimeNanoseconds
        let request = clientNamed(received)
        var template = "-"
        let cors = corsHeaders(for: request)
        let reply: Reply
        do {
            reply = try route(request, template: &template)
        } catch {
            reply = .now(.error(error))
        }
        let elementsOn = configuration.elements.isEnabled
        let finish: @Sendable (HTTPResponse) -> Void = { [accessLog, metrics, template] response in
            var response = response
            if !cors.isEmpty { response.headers += cors }
            // With Elements on, Cloak's origin holds the frames that hold card values. An
            // upstream's answer through a route (any type, any content: Cloak did not write it)
            // must never run as a document of that origin and reach into them: a sandboxed,
            // unframeable document without scripts, should a browser be sent to it. Cloak's own
            // answers are JSON or text it writes itself, and go without (two headers cost 5% of
            // a request: Benchmarks/README.md).
            if elementsOn && Self.forwardsUpstreamAnswers(template) {
                response.headers.append(("Content-Security-Policy", Self.apiCSP))
                response.headers.append(("X-Content-Type-Options", "nosniff"))
            }
            let nanoseconds = DispatchTime.now().uptimeNanoseconds - start
            let micros = nanoseconds / 1000
            metrics.record(route: template, status: response.status, nanoseconds: Int64(nanoseconds), loop: request.loop)
            accessLog.record(
                method: request.method.rawValue, path: request.path, route: template, status: response.status,
                micros: Int(micros), requestID: request.requestID, client: request.remoteAddress)
            responder.respond(response)
        }
        switch reply {
        case let .now(response): finish(response)
        case let .later(work): work(finish)
        }
    }

    /// `request` with its client address: behind trusted proxies the one `Forwarded` /
    /// `X-Forwarded-For` names (``ForwardedClient``). Rate limits, audit lines and the access log
    /// use it from here on.
    func clientNamed(_ request: HTTPRequest) -> HTTPRequest {
        let trusted = configuration.server.trustedProxies
        guard !trusted.isEmpty, request.forwardingTrusted else { return request }
        let forwarded = ForwardedClient.resolve(peer: request.remoteAddress, headers: request.headers, trusted: trusted,
                                                header: configuration.server.forwardedHeader)
        if let problem = forwarded.problem { ConnectionNotices.shared.report("forwarded_header_\(problem.rawValue)") }
        var named = request
        named.remoteAddress = forwarded.address
        return named
    }

    /// Handles a request and waits for its answer (benchmarks and in-process callers).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let box = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        handle(request, .collecting { response in
            box.withLock { $0 = response }
            done.signal()
        })
        done.wait()
        return box.withLock { $0! }
    }

    private func route(_ request: HTTPRequest, template: inout String) throws(CloakError) -> Reply {
        if let violation = request.violation { throw Self.error(for: violation) }
        if request.method == .OPTIONS, request.header("Access-Control-Request-Method") != nil {
            try checkRate(request, identity: auth.identify(request))
            template = "OPTIONS *"
            return .now(preflight(request))
        }
        let resolution = router.resolve(method: request.method, path: request.rawPath)
        // The egress door's Authorization belongs to the upstream: its caller is in Proxy-Authorization.
        let identity: Identity
        if case .found(.egress, _, _) = resolution {
            identity = auth.identifyProxy(request.header("Proxy-Authorization"))
        } else {
            identity = auth.identify(request)
        }
        var anonymousRate = false
        if case let .found(endpoint, _, _) = resolution {
            anonymousRate = Self.openEndpoints.contains(endpoint) && !identity.isCreator
                // A route's reveal needs the token's own scope: that token keeps its own bucket.
                && !(endpoint == .proxy && identity.token?.scopes.contains("aliases:reveal") == true)
        }
        // Elements' scripts and frame documents are static and cached: a checkout page loads
        // several, and they must not spend its visitors' anonymous request budget.
        if case .found(.elementsAsset, _, _) = resolution {} else {
            try checkRate(request, identity: identity, anonymous: anonymousRate)
        }
        switch resolution {
        case .notFound:
            throw .notFound("no such endpoint")
        case let .methodNotAllowed(allowed, t):
            template = t
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            return .now(.error(
                CloakError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; allowed: \(list)"),
                headers: [("Allow", list)]))
        case let .found(endpoint, parameters, t):
            template = t
            return try dispatch(endpoint, parameters, request, identity)
        }
    }

    static let elementsAssetTemplate = "/elements/v1/{asset}"

    /// The doors whose answers come from an upstream: `/proxy/…` routes and `/egress/…`.
    static func forwardsUpstreamAnswers(_ template: String) -> Bool {
        template.hasPrefix("/proxy/") || template.hasPrefix("/egress/")
    }
    static let apiCSP = "sandbox; default-src 'none'; frame-ancestors 'none'"

    /// The endpoints anyone may call (browsers and apps tokenize without a token): there, a
    /// token without `aliases:create` counts as no token at all.
    static let openEndpoints: Set<Endpoint> = [.validate, .formTokens, .formSend, .createTokens, .proxy]

    /// Past its rate (per token id, else per client address): 429 with `Retry-After`. Health
    /// probes are never limited: a balancer must not take a node out because of its own checks.
    /// With `anonymous` (an open endpoint, a token without `aliases:create`) the token takes
    /// from its address's anonymous bucket, like any anonymous caller.
    func checkRate(_ request: HTTPRequest, identity: Identity, anonymous: Bool = false) throws(CloakError) {
        if request.path == "/healthz" || request.path == "/readyz" { return }
        let key: RateLimiter.Key
        var limit: RateLimit
        if let token = identity.token, !anonymous {
            key = .token(token.id)
            limit = tokenLimit(token)
        } else {
            key = .client(request.remoteAddress)
            limit = configuration.limits.anonymous
        }
        guard let wait = rateLimiter.take(key, limit: limit, now: DispatchTime.now().uptimeNanoseconds) else { return }
        if case .token = key { metrics.rateLimited("token") } else { metrics.rateLimited("anonymous") }
        throw CloakError(.tooManyRequests, "too many requests; retry after \(wait) s",
                         extraInfo: [("retryAfterSeconds", .int(wait))])
    }

    /// A token's rate: `limits.token`, or its own `requests_per_minute`.
    func tokenLimit(_ token: ServiceConfiguration.AccessToken) -> RateLimit {
        var limit = configuration.limits.token
        if let perMinute = token.requestsPerMinute {
            limit.requestsPerMinute = perMinute
            limit.burst = min(limit.burst, perMinute)
        }
        return limit
    }

    /// The limits a token holder's creates pass before the vault (see ``CreateAdmission``); nil
    /// for callers without a token. Callers without `aliases:create` get random aliases on the
    /// open endpoints (the admission is then never asked); on the egress doors a route's
    /// operations alias deterministically for any token that may use it, under these limits.
    func admission(for identity: Identity) -> CreateAdmission? {
        guard let token = identity.token else { return nil }
        let limit = tokenLimit(token)
        return CreateAdmission(
            tokenID: token.id, limiter: guessLimiter, valuesPerHour: configuration.limits.bucketValuesPerHour,
            charge: { [rateLimiter, metrics] n in
                let wait = rateLimiter.take(.token(token.id), limit: limit, now: DispatchTime.now().uptimeNanoseconds, cost: n)
                if wait != nil { metrics.rateLimited("token") }
                return wait
            },
            refused: { [metrics, logger] format, enforced in
                metrics.bucketLimited(format.rawValue)
                logger.warning("audit", metadata: [
                    "action": "bucket_limit", "token_id": .string(token.id), "format": .string(format.rawValue),
                    "result": .string(enforced ? "refused" : "counted"),
                ])
            })
    }

    private func dispatch(_ endpoint: Endpoint, _ parameters: RouteParameters, _ request: HTTPRequest,
                          _ identity: Identity) throws(CloakError) -> Reply {
        switch endpoint {
        case .healthz:
            return .now(HealthHandler.healthy)
        case .metrics:
            metrics.logLinesDropped(LogQueue.standardOutput.dropped)
            metrics.clientAddressRefusals(ConnectionNotices.shared.counts)
            return .now(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")],
                                     body: metrics.exposition()))
        case .readyz:
            if isDraining.load(ordering: .relaxed) { return .now(HealthHandler.draining) }
            let stalled = watchdog.stalledLoops(now: DispatchTime.now().uptimeNanoseconds,
                                                limit: UInt64(configuration.loopStallSeconds * 1e9))
            if !stalled.isEmpty {
                metrics.loopStalled()
                return .now(HealthHandler.loopStalled(stalled))
            }
            guard let client = vaultClient(request) else { return .now(HealthHandler.ready) }
            return .later { finish in
                client.ping { result in
                    if case .success = result { finish(HealthHandler.ready) } else { finish(HealthHandler.storeDown) }
                }
            }
        case .validate:
            return .now(try ValidateHandler(context: context).handle(request, form: parameters["form"] ?? ""))
        case .formTokens, .formAliases, .formSend:
            return try FormTokenizeHandler(context: context, vault: try requireVault(request, identity), identity: identity)
                .handle(request, form: parameters["form"] ?? "", requiresToken: endpoint == .formAliases,
                        answer: endpoint == .formSend ? .mappedBody : .flatResult)
        case .createTokens, .createAliases:
            return try vaultAPI(identity, request).create(request, requiresToken: endpoint == .createAliases)
        case .revealMany:
            return try vaultAPI(identity, request).revealMany(request)
        case .reveal:
            return try vaultAPI(identity, request).reveal(request, alias: parameters["alias"] ?? "")
        case .update:
            return try vaultAPI(identity, request).update(request, alias: parameters["alias"] ?? "")
        case .delete:
            return try vaultAPI(identity, request).delete(request, alias: parameters["alias"] ?? "")
        case .keep:
            return try vaultAPI(identity, request).keep(request)
        case .lookup:
            return try vaultAPI(identity, request).lookup(request)
        case .egress:
            // Whatever spelling of the path reached it (`//egress/…`), the egress door's caller is
            // only ever Proxy-Authorization.
            return egressHandler(identity).transformDoor(request, routeID: parameters["route"] ?? "")
        case .elementsAsset:
            return .now(try ElementsHandler(context: context).asset(request, name: parameters["asset"] ?? ""))
        case .elementsSchema:
            return .now(try ElementsHandler(context: context).schema(request, form: parameters["form"] ?? ""))
        case .elementsSession:
            return .now(try elementsReveal(request, identity).createSession(request, now: Int64(Date().timeIntervalSince1970)))
        case .elementsReveal:
            return try elementsReveal(request, identity).reveal(request, now: Int64(Date().timeIntervalSince1970))
        case .proxy:
            return try ProxyHandler(context: context, vault: vaultClient(request, identity), routes: proxyRoutes, identity: identity)
                .handle(request)
        }
    }

    /// The vault for one request's handlers: its completions run on the request's loop.
    private func vaultClient(_ request: HTTPRequest, _ identity: Identity? = nil) -> VaultClient? {
        vault.map {
            VaultClient(vault: $0, loop: request.loop, admission: identity.flatMap { admission(for: $0) },
                        onBucketFull: { [metrics] format in metrics.bucketFull(format.rawValue) },
                        chargeAnonymous: { [rateLimiter, metrics, configuration] n in
                            let wait = rateLimiter.take(.client(request.remoteAddress), limit: configuration.limits.anonymous,
                                                        now: DispatchTime.now().uptimeNanoseconds, cost: n)
                            if wait != nil { metrics.rateLimited("anonymous") }
                            return wait
                        })
        }
    }

    /// The request's vault client, or 1500 when this server runs without a vault.
    private func requireVault(_ request: HTTPRequest, _ identity: Identity? = nil) throws(CloakError) -> VaultClient {
        guard let client = vaultClient(request, identity) else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        return client
    }

    private func elementsReveal(_ request: HTTPRequest, _ identity: Identity) throws(CloakError) -> ElementsRevealHandler {
        let elements = ElementsHandler(context: context)
        try elements.requireEnabled()
        guard let sessionKey = elementsSessionKey else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
        return ElementsRevealHandler(elements: elements, vault: try requireVault(request), sessionKey: sessionKey,
                                     identity: identity, client: request.remoteAddress)
    }

    private func vaultAPI(_ identity: Identity, _ request: HTTPRequest) throws(CloakError) -> VaultAPIHandler {
        VaultAPIHandler(vault: try requireVault(request, identity), identity: identity, openTokenize: configuration.openTokenize,
                        logger: context.logger, client: request.remoteAddress)
    }

    static func error(for violation: HTTPViolation) -> CloakError {
        switch violation {
        case let .bodyTooLarge(limit):
            return CloakError(.payloadTooLarge, "the body is larger than \(limit) bytes",
                              extraInfo: [("maxBodyBytes", .int(limit))])
        case .conflictingContentLength:
            return .malformed("the request has conflicting Content-Length headers")
        case .invalidHeaderName:
            return .malformed("a header name is not a token (no spaces or control characters before the colon)")
        case let .malformedFraming(reason):
            return .malformed("the request breaks strict HTTP/1.1 framing (\(reason)); the connection is closed")
        }
    }

    // MARK: CORS

    private func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard !configuration.corsAllowedOrigins.isEmpty, let origin = request.header("Origin"),
            configuration.corsAllowedOrigins.contains(origin)
        else { return nil }
        return origin
    }

    private func corsHeaders(for request: HTTPRequest) -> [(name: String, value: String)] {
        guard let origin = allowedOrigin(request) else { return [] }
        return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    }

    private func preflight(_ request: HTTPRequest) -> HTTPResponse {
        guard allowedOrigin(request) != nil else {
            return .error(CloakError(.forbidden, "origin not allowed"))
        }
        return HTTPResponse(status: 204, headers: [
            ("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Route-Id, X-Request-Id"),
            ("Access-Control-Max-Age", "600"),
        ])
    }
}
