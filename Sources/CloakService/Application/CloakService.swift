import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation
import Logging
import Synchronization
import Tracing

/// The service: two doors (the API listener and the egress forward-proxy door), each a list of
/// middleware and a handler (``Door``); every failure becomes a VGSError body, every answer an
/// access-log line.
///
/// ```swift
/// let configuration = try ServiceConfiguration.load(path: "config/cloak.yaml")
/// let vault = try VaultBootstrap.open(configuration.vault, environment: [:], logger: nil)
/// let service = CloakService(configuration: configuration, vault: vault)
/// let server = try HTTPServer(configuration: configuration.server, deferredHandler: service.handle,
///                             watchdog: service.watchdog)
/// server.start()
/// ```
package final class CloakService: Sendable {
    /// This build's version (`cloak version`, the console's overview, the nodes' heartbeats).
    package static let version = "0.1.0"
    package let configuration: ServiceConfiguration
    let context: ServiceContext
    /// What outlives a reload (the vault, limits' counts, metrics, the token directory).
    let state: ServiceState
    let auth: Authenticator
    /// Signs the forward-proxy door's per-host certificates (nil: no forward door).
    let egressCertificates: EgressCertificates?
    let rates: RequestRates
    /// The API listener's door (every endpoint, Elements' assets included) and the forward-proxy
    /// door's (`egress.listen`: requests inside CONNECT tunnels and absolute-form requests), each
    /// with its steps specialized; the handler is given per request (it refers to the service).
    private let apiDoor: @Sendable (HTTPRequest, HTTPResponder, CloakService) -> Void
    private let forwardDoor: @Sendable (HTTPRequest, HTTPResponder, CloakService) -> Void
    /// The console's door (`console.listen`): its page, sessions and the admin endpoints it uses.
    private let consoleDoor: @Sendable (HTTPRequest, HTTPResponder, CloakService) -> Void
    /// The forward-proxy door's steps for a CONNECT, before ``decideTunnel(_:host:port:)``.
    private let tunnelDoor:
        @Sendable (HTTPRequest, (inout RequestContext) throws(CloakError) -> TunnelDecision) -> TunnelDecision

    var vault: Vault? { state.vault }
    /// Reads the store's API credentials every `auth.refresh_s` (nil without a vault).
    package var credentialRefresh: CredentialRefresh? { state.credentialRefresh }
    package var binRefresh: BinTableRefresh? { state.binRefresh }
    var metrics: ServiceMetrics { state.metrics }
    var egressMetrics: EgressMetrics { state.egressMetrics }
    /// Distinct values per token and format-preserving bucket (`limits.bucket_values_per_hour`).
    var guessLimiter: BucketGuessLimiter { state.guessLimiter }
    /// Every loop of this service's servers beats here; `/readyz` fails when one stops.
    package var watchdog: LoopWatchdog { state.watchdog }
    /// Signs Cloak Elements' reveal sessions (nil without a vault): derived from the key ring,
    /// so every node that shares it accepts any node's sessions.
    var elementsSessionKey: HMACKey? { state.elementsSessionKey }

    /// - Parameters:
    ///   - vault: the vault for the alias endpoints (they answer 1500 without one).
    ///   - logSink: where the JSON log lines go (standard output by default; tests capture them).
    ///   - today: the date that decides expiry windows (the system's by default).
    ///   - egressCA: signs the forward-proxy door's certificates (``handleEgress(_:_:)``).
    ///   - traces: the export of `telemetry.traces` (nil: tracing is off); its owner stops it.
    package convenience init(
        configuration: ServiceConfiguration, vault: Vault? = nil,
        logSink: @escaping LogSink = JSONLogHandler.standardOutput, today: (@Sendable () -> CalendarDate)? = nil,
        egressCA: CertificateAuthority? = nil, traces: TraceExport? = nil
    ) {
        self.init(
            configuration: configuration,
            state: ServiceState(
                configuration: configuration, vault: vault, logSink: logSink,
                today: today ?? ServiceContext.systemToday,
                egressCA: egressCA, traces: traces))
    }

    /// A service for `configuration` on `state`: the first one, or the next one of a reload
    /// (``ServiceHost``).
    init(configuration: ServiceConfiguration, state: ServiceState) {
        self.configuration = configuration
        self.state = state
        let egressCertificates = state.egressCA.map {
            EgressCertificates($0, hosts: configuration.egress.routes.compactMap { $0.upstream?.host })
        }
        self.egressCertificates = egressCertificates
        let logSink = state.logSink
        let accessLog = AccessLog(sink: logSink)
        let auth = Authenticator(directory: state.directory)
        self.auth = auth
        let rates = RequestRates(limiter: state.limiter, limits: configuration.limits, metrics: state.metrics)
        self.rates = rates
        let logger = state.logger
        let today = state.today
        self.context = ServiceContext(
            configuration: configuration, logger: logger, logSink: logSink, today: today)
        ConnectionNotices.shared.setSink { reason in
            logger.warning(
                "client address not taken",
                metadata: [
                    "reason": .string(reason),
                    "note": "logged once per reason; counted in cloak_client_address_refused_total",
                ])
        }
        for failure in egressCertificates?.failures ?? [] {
            logger.error(
                "cannot make the egress certificate for a route's host; CONNECTs to it are refused",
                metadata: ["host": .string(failure.host), "error": .string(failure.reason)])
        }

        // The order is the order of the way in; answers pass back in reverse (``Door``).
        let metrics = state.metrics
        let auditLog = AuditLog(logger: logger, sink: state.logSink)
        let api = MiddlewareChain.build {
            AccessLogMiddleware(log: accessLog)
            MetricsMiddleware(metrics: metrics)
            ConsoleCookieMiddleware()
            ClientAddressMiddleware(
                trusted: configuration.server.trustedProxies, header: configuration.server.forwardedHeader)
            SandboxMiddleware(enabled: configuration.elements.isEnabled)
            ViolationMiddleware()
            RoutingMiddleware(router: Self.router)
            AuthMiddleware(authenticator: auth, credentials: .api)
            RateLimitMiddleware(rates: rates)
            TracingMiddleware(
                tracer: state.tracer, sampleRatio: configuration.traces?.sampleRatio ?? 1,
                trust: configuration.traces?.trustIncomingContext ?? .authenticated)
            CORSMiddleware(allowedOrigins: configuration.corsAllowedOrigins)
            AuditMiddleware(log: auditLog, refusals: state.refusals)
            ScopeMiddleware(openTokenize: configuration.openTokenize)
            DiskReserveMiddleware(reserve: state.diskReserve, reserveMiB: configuration.limits.diskReserveMiB)
        }
        var unknownToken: UnknownTokenReading?
        if let refresh = state.credentialRefresh {
            unknownToken = { then in refresh.refreshForUnknown(then: then) }
        }
        let apiDoor = Door(steps: api, unknownToken: unknownToken, keepAudit: Self.auditKeeping(state.vault))
        self.apiDoor = { request, responder, service in apiDoor.handle(request, responder, APIHandler(service: service))
        }
        let forward = MiddlewareChain.build {
            AccessLogMiddleware(log: accessLog, door: "egress-proxy")
            MetricsMiddleware(metrics: metrics, route: "egress-proxy")
            ConsoleCookieMiddleware()
            ViolationMiddleware()
            AuthMiddleware(authenticator: auth, credentials: .forwardProxy)
            RateLimitMiddleware(rates: rates)
            TracingMiddleware(
                tracer: state.tracer, sampleRatio: configuration.traces?.sampleRatio ?? 1,
                trust: configuration.traces?.trustIncomingContext ?? .authenticated)
        }
        let forwardDoor = Door(steps: forward, keepAudit: Self.auditKeeping(state.vault))
        self.forwardDoor = { request, responder, service in
            forwardDoor.handle(request, responder, ForwardDoorHandler(service: service))
        }
        self.tunnelDoor = { request, decide in forwardDoor.decide(request, decide) }
        let console = MiddlewareChain.build {
            AccessLogMiddleware(log: accessLog, door: nil)
            MetricsMiddleware(metrics: metrics)
            ViolationMiddleware()
            RoutingMiddleware(router: ConsoleEndpoints.router)
            ConsoleGuardMiddleware(
                sessions: state.consoleSessions, directory: state.directory, tls: configuration.server.tls != nil,
                hosts: { [console = configuration.console, tls = configuration.server.tls != nil, state] in
                    console.hosts(tls: tls, boundPort: state.consolePort.load(ordering: .relaxed))
                },
                elementsOrigin: configuration.console.elementsOrigin)
            RateLimitMiddleware(rates: rates)
            AuditMiddleware(log: auditLog, refusals: state.refusals)
            ScopeMiddleware(openTokenize: false)
        }
        let consoleDoor = Door(steps: console, unknownToken: unknownToken, keepAudit: Self.auditKeeping(state.vault))
        self.consoleDoor = { request, responder, service in
            consoleDoor.handle(request, responder, APIHandler(service: service))
        }
    }

    /// Every endpoint of the API listener (``Endpoint/api``).
    static var router: Router<Endpoint> { Endpoint.apiRouter }

    package var logger: Logger { context.logger }

    /// Marks the service as draining: `/readyz` answers 503 so balancers stop sending traffic.
    package func beginDraining() { state.isDraining.store(true, ordering: .relaxed) }

    /// The ``HTTPDeferredHandler`` of the API listener: answers now, or later on the request's loop.
    /// A request's endpoint (handed on to ``RoutingMiddleware``) and how its body is read, as
    /// the endpoint declares (``Endpoint/BodyReading``); `rawPath` as the client sent it (the
    /// router matches it so).
    package func route(_ method: HTTPMethod, _ rawPath: String) -> HeadRoute {
        Self.route(method, rawPath) { self }
    }

    /// The endpoint is found without the service; `service` is asked only for an endpoint
    /// that may stream (a form's upload), so that every other request takes no lock.
    static func route(_ method: HTTPMethod, _ rawPath: String, service: () -> CloakService) -> HeadRoute {
        let found = router.resolve(method: method, path: rawPath)
        guard case .found(let endpoint, let parameters, _) = found, case .streamed(let limit) = endpoint.body,
            let most = limit(service(), parameters)
        else { return HeadRoute(body: .whole, found: found) }
        return HeadRoute(body: .streamed(maxBytes: most), found: found)
    }

    /// The most bytes a submission of `form` may have: its text, plus every file its rules allow
    /// base64-encoded (the larger of the two encodings) with room for JSON's `\/` escapes (Apple's
    /// JSONSerialization escapes every `/`), each with room for its part's head. The files' own
    /// sizes are checked on their decoded bytes.
    static func uploadLimit(_ form: FormSchema, textBytes: Int) -> Int {
        form.fields.compactMap(\.fileRules).reduce(textBytes) { total, rules in
            total + rules.maxFiles * ((rules.maxBytes + 2) / 3 * 4 * 2 + 4096)
        }
    }

    package func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        apiDoor(request, responder, self)
    }

    /// The ``HTTPDeferredHandler`` of the forward-proxy door (`egress.listen`): requests inside
    /// CONNECT tunnels and absolute-form requests.
    package func handleEgress(_ request: HTTPRequest, _ responder: HTTPResponder) {
        forwardDoor(request, responder, self)
    }

    /// The ``HTTPDeferredHandler`` of the console's listener (`console.listen`).
    package func handleConsole(_ request: HTTPRequest, _ responder: HTTPResponder) {
        consoleDoor(request, responder, self)
    }

    /// The console's page and sessions (``ConsoleEndpoints``).
    var console: ConsoleHandler {
        ConsoleHandler(
            sessions: state.consoleSessions, authenticator: auth, settings: configuration.console,
            tls: configuration.server.tls != nil)
    }

    /// Passes a CONNECT through the forward-proxy door's steps, then decides it.
    func passTunnelDoor(
        _ connect: HTTPRequest, _ decide: (inout RequestContext) throws(CloakError) -> TunnelDecision
    ) -> TunnelDecision {
        tunnelDoor(connect, decide)
    }

    /// Handles a request on the API listener's door and waits for its answer (benchmarks and
    /// in-process callers).
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        ThreadWait<HTTPResponse>.answer { done in handle(request, .collecting(done)) }
    }

    /// The limits a token holder's creates pass before the vault (see ``CreateAdmission``); nil
    /// for callers without a token. Callers without `aliases:create` get random aliases on the
    /// open endpoints (the admission is then never asked); on the egress doors a route's
    /// operations alias deterministically for any token that may use it, under these limits.
    func admission(for identity: Identity, client: String = "-") -> CreateAdmission? {
        guard let token = identity.token else { return nil }
        return CreateAdmission(
            account: token.guessKey, presenter: token.id, limiter: guessLimiter,
            valuesPerHour: token.createBucketLimit(default: configuration.limits.bucketValuesPerHour),
            guessLimit: token.lookupBucketLimit(default: configuration.limits.bucketValuesPerHour),
            charge: { [rates] n in rates.chargeToken(token, n) },
            refused: { [metrics, audit = AuditLog(logger: logger, vault: vault)] refusal, enforced in
                metrics.bucketLimited(refusal.format.rawValue)
                // An admission event, not an endpoint's outcome: written when it happens, at warning.
                audit.record(
                    AuditEvent.Draft(
                        made: .bucketLimit, tokenID: token.id, client: client,
                        result: enforced ? .refused : .counted,
                        facts: [("format", refusal.format.rawValue), ("limit", refusal.limit.name)]),
                    level: .warning)
            },
            memoryBudget: configuration.limits.guessMemoryMiB << 20)
    }

    /// The vault for one request's handlers: its completions run on the request's loop.
    func vaultClient(
        _ request: HTTPRequest, _ identity: Identity? = nil, trace: RequestTrace? = nil, audit: Outcome? = nil
    ) -> VaultClient? {
        vault.map {
            VaultClient(
                vault: $0, loop: request.loop,
                admission: identity.flatMap { admission(for: $0, client: request.remoteAddress) },
                lookupValuesPerHour: identity?.token?.lookupBucketLimit(
                    default: configuration.limits.bucketValuesPerHour),
                onBucketFull: { [metrics] format in metrics.bucketFull(format.rawValue) },
                chargeAnonymous: { [rates, address = request.remoteAddress] n in rates.chargeAnonymous(address, n) },
                onUnavailable: Self.logUnavailable(logger), trace: trace, bins: binRefresh?.current?.table,
                audit: audit)
        }
    }

    /// Logs why a reveal found the vault unavailable (e.g. "the key k1 that sealed a record is not
    /// in the key ring": a record restored from before a version was retired).
    static func logUnavailable(_ logger: Logger) -> @Sendable (String) -> Void {
        { reason in logger.error("vault unavailable", metadata: ["reason": .string(reason)]) }
    }

    /// Stores a request's audit entries with the vault's next commit (nil without a vault).
    static func auditKeeping(_ vault: Vault?) -> AuditKeeping? {
        guard let vault else { return nil }
        return { entries, done in
            vault.recordAudit(entries) { result in
                guard case .failure = result else { return done(nil) }
                done(.storeUnavailable("the audit trail could not be written; the answer was withheld"))
            }
        }
    }

    /// The request's vault client, or 1500 when this server runs without a vault.
    func requireVault(
        _ request: HTTPRequest, _ identity: Identity? = nil, trace: RequestTrace? = nil, audit: Outcome? = nil
    ) throws(CloakError) -> VaultClient {
        guard let client = vaultClient(request, identity, trace: trace, audit: audit) else {
            throw CloakError(.vaultUnavailable, "this server runs without a vault")
        }
        return client
    }
}
