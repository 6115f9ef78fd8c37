public import CloakCore
public import CloakHTTP
import Foundation
public import Logging
import Synchronization

/// The service: routes each request to its handler, turns every failure into a VGSError body,
/// and writes one log line per request.
///
/// ```swift
/// let service = CloakService(configuration: try .load(path: "config/cloak.yaml"))
/// let server = try HTTPServer(configuration: service.configuration.server, handler: service.handle)
/// server.start()
/// ```
public final class CloakService: Sendable {
    public let configuration: ServiceConfiguration
    private let context: ServiceContext
    private let router: Router<Endpoint>
    private let isDraining = Atomic<Bool>(false)
    private let accessLog: AccessLog

    enum Endpoint: Sendable {
        case healthz, readyz, validate
    }

    /// - Parameters:
    ///   - logSink: where the JSON log lines go (standard output by default; tests capture them).
    ///   - today: the date that decides expiry windows (the system's by default).
    public init(
        configuration: ServiceConfiguration, logSink: @escaping LogSink = JSONLogHandler.standardOutput,
        today: (@Sendable () -> CalendarDate)? = nil
    ) {
        self.configuration = configuration
        self.accessLog = AccessLog(sink: logSink)
        let logger = Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: logSink) }
        self.context = ServiceContext(configuration: configuration, logger: logger, today: today ?? ServiceContext.systemToday)
        var router = Router<Endpoint>()
        router.add(.GET, "/healthz", .healthz)
        router.add(.GET, "/readyz", .readyz)
        router.add(.POST, "/forms/{form}/validate", .validate)
        self.router = router
    }

    public var logger: Logger { context.logger }

    /// Marks the service as draining: `/readyz` answers 503 so balancers stop sending traffic.
    public func beginDraining() { isDraining.store(true, ordering: .relaxed) }

    /// The ``HTTPHandler`` for the server.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        var template = "-"
        var response: HTTPResponse
        do {
            response = try route(request, template: &template)
        } catch {
            response = .error(error)
        }
        response.headers += corsHeaders(for: request)
        let micros = (DispatchTime.now().uptimeNanoseconds - start) / 1000
        accessLog.record(
            method: request.method.rawValue, path: request.path, route: template, status: response.status,
            micros: Int(micros), requestID: request.requestID)
        return response
    }

    private func route(_ request: HTTPRequest, template: inout String) throws(CloakError) -> HTTPResponse {
        if let violation = request.violation { throw Self.error(for: violation) }
        if request.method == .OPTIONS, request.header("Access-Control-Request-Method") != nil {
            template = "OPTIONS *"
            return preflight(request)
        }
        switch router.resolve(method: request.method, path: request.path) {
        case .notFound:
            throw .notFound("no such endpoint")
        case let .methodNotAllowed(allowed, t):
            template = t
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            return .error(
                CloakError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here; allowed: \(list)"),
                headers: [("Allow", list)])
        case let .found(endpoint, parameters, t):
            template = t
            switch endpoint {
            case .healthz: return HealthHandler.healthy
            case .readyz: return isDraining.load(ordering: .relaxed) ? HealthHandler.draining : HealthHandler.ready
            case .validate: return try ValidateHandler(context: context).handle(request, form: parameters["form"] ?? "")
            }
        }
    }

    static func error(for violation: HTTPViolation) -> CloakError {
        switch violation {
        case let .bodyTooLarge(limit):
            return CloakError(.payloadTooLarge, "the body is larger than \(limit) bytes",
                              extraInfo: [("maxBodyBytes", .int(limit))])
        case .conflictingContentLength:
            return .malformed("the request has conflicting Content-Length headers")
        case let .tooManyConnections(limit):
            return CloakError(.tooManyConnections, "the server has reached its limit of \(limit) open connections")
        }
    }

    // MARK: CORS

    private func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard let origin = request.header("Origin"), configuration.corsAllowedOrigins.contains(origin) else { return nil }
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
