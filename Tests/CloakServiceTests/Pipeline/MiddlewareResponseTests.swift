import CloakCore
import CloakHTTP
import Synchronization
import Testing

@testable import CloakService

/// Preflights from allowed origins are answered; every answer to an allowed origin names it.
@Suite struct CORSMiddlewareTests {
    typealias F = MiddlewareFixture

    static let cors = CORSMiddleware(allowedOrigins: [F.origin])

    static func preflight(origin: String?) -> RequestContext {
        var headers: [(name: String, value: String)] = [("Access-Control-Request-Method", "POST")]
        if let origin { headers.append(("Origin", origin)) }
        return F.routed(.OPTIONS, "/tokens", headers: headers)
    }

    @Test func aPreflightFromAnAllowedOriginIsAnswered() throws {
        var context = Self.preflight(origin: F.origin)
        #expect(context.isPreflight)
        let answer = try Self.cors.request(&context)
        var response = try #require(answer)
        #expect(response.status == 204)
        #expect(F.header(response, "Access-Control-Allow-Methods") == "GET, POST, PUT, DELETE, OPTIONS")
        #expect(
            F.header(response, "Access-Control-Allow-Headers")
                == "Authorization, Content-Type, X-Route-Id, X-Request-Id")
        #expect(F.header(response, "Access-Control-Max-Age") == "600")
        #expect(context.template == "OPTIONS *")
        Self.cors.response(&response, context)
        #expect(F.header(response, "Access-Control-Allow-Origin") == F.origin)
        #expect(F.header(response, "Vary") == "Origin")
    }

    @Test(arguments: [Optional("https://evil.example"), Optional("null"), nil])
    func aPreflightFromAnyOtherOriginIsForbidden(origin: String?) throws {
        var context = Self.preflight(origin: origin)
        let refused = F.refusal(Self.cors, &context)
        let error = try #require(refused)
        #expect(error.code == .forbidden)
        #expect(error.code.rawValue == 1301)
        #expect(context.template == "OPTIONS *")
    }

    @Test func withoutAllowedOriginsEveryPreflightIsForbidden() {
        var context = Self.preflight(origin: F.origin)
        let refused = F.refusal(CORSMiddleware(allowedOrigins: []), &context)
        #expect(refused?.code == .forbidden)
    }

    @Test func anOrdinaryRequestPasses() throws {
        var context = F.admitted(.GET, "/aliases/tok_abc", headers: [("Origin", F.origin)])
        let answer = try Self.cors.request(&context)
        #expect(answer?.status == nil)
        #expect(context.template == "/aliases/{alias}")
    }

    struct Example: Sendable {
        var allowed: [String]
        var origin: String?
        var named: String?
    }

    static let answers: [Example] = [
        Example(allowed: [F.origin], origin: F.origin, named: F.origin),
        Example(
            allowed: [F.origin, "https://other.example"], origin: "https://other.example",
            named: "https://other.example"),
        Example(allowed: [F.origin], origin: "https://evil.example", named: nil),
        Example(allowed: [F.origin], origin: nil, named: nil),
        Example(allowed: [], origin: F.origin, named: nil),
    ]

    @Test(arguments: answers)
    func everyAnswerToAnAllowedOriginNamesIt(example: Example) {
        var headers: [(name: String, value: String)] = []
        if let origin = example.origin { headers.append(("Origin", origin)) }
        let context = F.routed(.POST, "/tokens", headers: headers)
        var response = HTTPResponse(status: 201, headers: [("Content-Type", "application/json")])
        CORSMiddleware(allowedOrigins: example.allowed).response(&response, context)
        if let named = example.named {
            #expect(response.headers.count == 3)
            #expect(F.header(response, "Access-Control-Allow-Origin") == named)
            #expect(F.header(response, "Vary") == "Origin")
        } else {
            #expect(response.headers.count == 1)
            #expect(F.header(response, "Access-Control-Allow-Origin") == nil)
        }
    }

    /// The API listener's steps, as ``CloakService`` lists them (without the log and metrics).
    static func apiDoor(_ trail: PhaseTrail) -> BoundDoor<some Middleware, RecordingHandler> {
        let rates = RequestRates(
            limiter: RateLimiter(), limits: ServiceConfiguration.RateLimits(), metrics: ServiceMetrics())
        return BoundDoor(
            steps: MiddlewareChain.build {
                ClientAddressMiddleware(trusted: TrustedProxies(), header: .xForwardedFor)
                ViolationMiddleware()
                RoutingMiddleware(router: CloakService.router)
                AuthMiddleware(authenticator: F.authenticator, credentials: .api)
                RateLimitMiddleware(rates: rates)
                CORSMiddleware(allowedOrigins: [F.origin])
            }, handler: RecordingHandler(trail: trail))
    }

    @Test func throughTheAPIDoorAPreflightIsAnsweredWithoutTheHandler() throws {
        let trail = PhaseTrail()
        let door = Self.apiDoor(trail)
        let allowed = try F.answer(
            door,
            F.request(
                .OPTIONS, "/tokens",
                headers: [
                    ("Origin", F.origin), ("Access-Control-Request-Method", "POST"),
                ]))
        #expect(allowed.status == 204)
        #expect(F.header(allowed, "Access-Control-Allow-Origin") == F.origin)
        #expect(F.header(allowed, "Access-Control-Max-Age") == "600")

        let refused = try F.answer(
            door,
            F.request(
                .OPTIONS, "/tokens",
                headers: [
                    ("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST"),
                ]))
        #expect(refused.status == 403)
        #expect(F.header(refused, "Access-Control-Allow-Origin") == nil)
        let error = try F.errorBody(refused)
        #expect(error["code"] == JSONValue.int(1301))
        #expect(trail.events.isEmpty)

        let handled = try F.answer(door, F.request(.POST, "/tokens", headers: [("Origin", F.origin)]))
        #expect(handled.status == 200)
        #expect(F.header(handled, "Access-Control-Allow-Origin") == F.origin)
        #expect(trail.events == ["handler /tokens"])
    }
}

/// Answers forwarded from an upstream are sandboxed; Cloak's own answers are not.
@Suite struct SandboxMiddlewareTests {
    typealias F = MiddlewareFixture

    static let templates: [(String, Bool)] = [
        ("/proxy/{path...}", true),
        ("/egress/{route}", true),
        ("/egress/{route}/{path...}", true),
        ("/tokens", false),
        ("/aliases/{alias}", false),
        ("/elements/v1/{asset}", false),
        ("OPTIONS *", false),
        ("egress-proxy", false),
        ("-", false),
    ]

    @Test(arguments: templates)
    func onlyUpstreamAnswersAreSandboxed(template: String, sandboxed: Bool) {
        var context = RequestContext(F.request(.GET, "/x"), start: 0)
        context.template = template
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "text/html")])
        SandboxMiddleware().response(&response, context)
        if sandboxed {
            #expect(response.headers.count == 3)
            #expect(
                F.header(response, "Content-Security-Policy") == "sandbox; default-src 'none'; frame-ancestors 'none'")
            #expect(F.header(response, "X-Content-Type-Options") == "nosniff")
        } else {
            #expect(response.headers.count == 1)
            #expect(F.header(response, "Content-Security-Policy") == nil)
        }
    }

    @Test func theRoutedProxyAnswerIsSandboxed() {
        let context = F.admitted(.POST, "/proxy/psp/charges")
        var response = HTTPResponse(status: 502)
        SandboxMiddleware().response(&response, context)
        #expect(F.header(response, "Content-Security-Policy") == SandboxMiddleware.policy)
    }
}

/// One access-log line per answer, labelled with the route template or the door's name.
@Suite struct AccessLogMiddlewareTests {
    typealias F = MiddlewareFixture

    /// The one line `AccessLogMiddleware` writes for `status`, parsed.
    static func line(_ context: RequestContext, status: Int, door: String? = nil) throws -> JSONValue {
        let lines = Mutex<[String]>([])
        let log = AccessLog { bytes in lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        var response = HTTPResponse(status: status)
        AccessLogMiddleware(log: log, door: door).response(&response, context)
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let text = try #require(written.first)
        return try JSONParser().parse(text)
    }

    @Test func theRouteIsTheTemplate() throws {
        let context = F.admitted(.GET, "/aliases/tok_abc", address: "192.0.2.7")
        let line = try Self.line(context, status: 200)
        #expect(line["method"]?.stringValue == "GET")
        // A path naming an alias is logged as its route: the alias stays out of the log.
        #expect(line["path"]?.stringValue == "/aliases/{alias}")
        #expect(line["route"]?.stringValue == "/aliases/{alias}")
        #expect(line["status"] == JSONValue.int(200))
        #expect(line["request_id"]?.stringValue == "req-1")
        #expect(line["client"]?.stringValue == "192.0.2.7")
    }

    @Test func anUnroutedRequestHasNoRoute() throws {
        let line = try Self.line(F.routed(.GET, "/nowhere"), status: 404)
        #expect(line["path"]?.stringValue == "/nowhere")
        #expect(line["route"]?.stringValue == "-")
        #expect(line["status"] == JSONValue.int(404))
    }

    @Test func theForwardProxyDoorLogsNoPath() throws {
        var context = RequestContext(F.request(.POST, "/v1/charges/ch_secret"), start: 0)
        context.template = "/v1/charges"
        let line = try Self.line(context, status: 502, door: "egress-proxy")
        #expect(line["method"]?.stringValue == "POST")
        #expect(line["path"]?.stringValue == "-")
        #expect(line["route"]?.stringValue == "egress-proxy")
        #expect(line["status"] == JSONValue.int(502))
    }
}

/// Answers are counted by route template, or under the door's label.
@Suite struct MetricsMiddlewareTests {
    typealias F = MiddlewareFixture

    @Test func answersAreCountedByTemplateOrDoorLabel() {
        let metrics = ServiceMetrics()
        let context = F.admitted(.POST, "/forms/checkout/validate")
        var response = HTTPResponse(status: 422)
        MetricsMiddleware(metrics: metrics).response(&response, context)
        MetricsMiddleware(metrics: metrics).response(&response, context)
        MetricsMiddleware(metrics: metrics, route: "egress-proxy").response(&response, context)
        var missing = HTTPResponse(status: 404)
        MetricsMiddleware(metrics: metrics).response(&missing, F.routed(.GET, "/nowhere"))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"cloak_requests_total{route="/forms/{form}/validate",status="422"} 2"#), "\(text)")
        #expect(text.contains(#"cloak_requests_total{route="egress-proxy",status="422"} 1"#))
        #expect(text.contains(#"cloak_requests_total{route="-",status="404"} 1"#))
        #expect(!text.contains("checkout"))
    }
}
