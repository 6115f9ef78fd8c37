import CloakCore
import CloakHTTP
import Foundation
import Testing

@testable import CloakService

/// Behind trusted proxies the client their header names replaces the peer; otherwise the peer stays.
@Suite struct ClientAddressMiddlewareTests {
    typealias F = MiddlewareFixture

    struct Example: Sendable {
        var trusted: [String]
        var header: ForwardedClient.Header = .xForwardedFor
        var peer: String
        var headers: [(name: String, value: String)] = []
        var forwardingTrusted = true
        var client: String
    }

    static let examples: [Example] = [
        Example(
            trusted: ["10.0.0.0/8"], peer: "10.0.0.5", headers: [("X-Forwarded-For", "203.0.113.7")],
            client: "203.0.113.7"),
        // Walked right to left: the first hop that is no trusted proxy is the client.
        Example(
            trusted: ["10.0.0.0/8"], peer: "10.0.0.5",
            headers: [("X-Forwarded-For", "198.51.100.1, 203.0.113.7, 10.0.0.9")], client: "203.0.113.7"),
        Example(
            trusted: ["fd00::/8"], peer: "fd00::1", headers: [("x-forwarded-for", "2001:db8::7")], client: "2001:db8::7"
        ),
        // A peer that is no trusted proxy is not believed.
        Example(
            trusted: ["10.0.0.0/8"], peer: "198.51.100.2", headers: [("X-Forwarded-For", "203.0.113.7")],
            client: "198.51.100.2"),
        // No trusted proxies: the header is never read.
        Example(trusted: [], peer: "10.0.0.5", headers: [("X-Forwarded-For", "203.0.113.7")], client: "10.0.0.5"),
        // A PROXY header that named no client: forwarding headers are the client's own text.
        Example(
            trusted: ["10.0.0.0/8"], peer: "10.0.0.5", headers: [("X-Forwarded-For", "203.0.113.7")],
            forwardingTrusted: false, client: "10.0.0.5"),
        Example(trusted: ["10.0.0.0/8"], peer: "10.0.0.5", client: "10.0.0.5"),
        // Only the configured header is read.
        Example(
            trusted: ["10.0.0.0/8"], header: .forwarded, peer: "10.0.0.5",
            headers: [("X-Forwarded-For", "203.0.113.7"), ("Forwarded", "for=203.0.113.8")], client: "203.0.113.8"),
        Example(
            trusted: ["10.0.0.0/8"], peer: "10.0.0.5", headers: [("Forwarded", "for=203.0.113.8")], client: "10.0.0.5"),
    ]

    @Test(arguments: examples)
    func theClientIsNamed(example: Example) {
        let networks = example.trusted.compactMap { IPNetwork($0) }
        #expect(networks.count == example.trusted.count)
        let step = ClientAddressMiddleware(trusted: TrustedProxies(networks), header: example.header)
        var request = F.request(.GET, "/aliases/tok_abc", headers: example.headers, address: example.peer)
        request.forwardingTrusted = example.forwardingTrusted
        var context = RequestContext(request, start: 0)
        let refused = F.refusal(step, &context)
        #expect(refused == nil)
        #expect(context.request.remoteAddress == example.client)
    }
}

/// The API router's endpoint, template and parameters for each request; preflights are marked instead.
@Suite struct RoutingMiddlewareTests {
    typealias F = MiddlewareFixture

    struct Example: Sendable {
        var method: HTTPMethod
        var rawPath: String
        var headers: [(name: String, value: String)] = []
        var endpoint: String?
        var template: String
        var resolution: String
        var parameters: [String: String] = [:]
        var preflight = false
    }

    static let examples: [Example] = [
        Example(
            method: .POST, rawPath: "/forms/checkout/validate", endpoint: "validate",
            template: "/forms/{form}/validate",
            resolution: "found", parameters: ["form": "checkout"]),
        // Routed on the path as sent: an encoded `/` stays inside its parameter.
        Example(
            method: .GET, rawPath: "/aliases/tok%2Fabc", endpoint: "reveal", template: "/aliases/{alias}",
            resolution: "found", parameters: ["alias": "tok/abc"]),
        Example(
            method: .DELETE, rawPath: "/aliases/tok_abc", endpoint: "delete", template: "/aliases/{alias}",
            resolution: "found", parameters: ["alias": "tok_abc"]),
        Example(
            method: .POST, rawPath: "/aliases/keep", endpoint: "keep", template: "/aliases/keep", resolution: "found"),
        Example(method: .HEAD, rawPath: "/healthz", endpoint: "healthz", template: "/healthz", resolution: "found"),
        Example(
            method: .POST, rawPath: "/proxy/psp/charges", endpoint: "proxy", template: "/proxy/{path...}",
            resolution: "found", parameters: ["path": "psp/charges"]),
        Example(
            method: .PUT, rawPath: "/egress/psp/v1/charges", endpoint: "egress", template: "/egress/{route}/{path...}",
            resolution: "found", parameters: ["route": "psp", "path": "v1/charges"]),
        Example(
            method: .GET, rawPath: "/elements/v1/cloak.js", endpoint: "elements-asset",
            template: "/elements/v1/{asset}",
            resolution: "found", parameters: ["asset": "cloak.js"]),
        // 405: the template names the request, but there is no endpoint.
        Example(
            method: .DELETE, rawPath: "/forms/checkout/validate", endpoint: nil, template: "/forms/{form}/validate",
            resolution: "405"),
        Example(method: .GET, rawPath: "/tokens", endpoint: nil, template: "/tokens", resolution: "405"),
        Example(method: .GET, rawPath: "/nowhere", endpoint: nil, template: "-", resolution: "none"),
        // A CORS preflight is marked, never routed.
        Example(
            method: .OPTIONS, rawPath: "/tokens", headers: [("Access-Control-Request-Method", "POST")], endpoint: nil,
            template: "-", resolution: "none", preflight: true),
        // A plain OPTIONS is routed like any method.
        Example(method: .OPTIONS, rawPath: "/tokens", endpoint: nil, template: "/tokens", resolution: "405"),
        Example(
            method: .OPTIONS, rawPath: "/proxy/psp", endpoint: nil, template: "/proxy/{path...}", resolution: "405"),
    ]

    @Test(arguments: examples)
    func theEndpointAndTemplateAreFound(example: Example) throws {
        var request = F.request(
            example.method, example.rawPath.removingPercentEncoding ?? example.rawPath, headers: example.headers)
        request.rawPath = example.rawPath
        var context = RequestContext(request, start: 0)
        let answer = try RoutingMiddleware(router: CloakService.router).request(&context)
        #expect(answer?.status == nil)
        #expect(context.isPreflight == example.preflight)
        #expect(context.endpoint?.name == example.endpoint)
        #expect(context.routeTemplate == example.template)
        #expect(context.template == "-", "labelled by its route only once admitted")
        #expect(F.resolution(context.route) == example.resolution)
        for (name, value) in example.parameters {
            #expect(context.parameter(name) == value, "\(name)")
        }
        #expect(context.parameter("nonesuch") == "")
    }

    @Test func aMethodNotAllowedNamesTheAllowedMethods() {
        let context = F.routed(.OPTIONS, "/aliases/tok_abc")
        guard case let .methodNotAllowed(allowed, template) = context.route else {
            Issue.record("not a 405: \(F.resolution(context.route))")
            return
        }
        #expect(Set(allowed) == Set<HTTPMethod>([.GET, .HEAD, .PUT, .DELETE]))
        #expect(template == "/aliases/{alias}")
        #expect(context.parameter("alias") == "")
    }
}

/// The caller is identified from the header its door reads; nothing is refused here.
@Suite struct AuthMiddlewareTests {
    typealias F = MiddlewareFixture

    struct Example: Sendable {
        var credentials: AuthMiddleware.Credentials
        var method: HTTPMethod = .GET
        var path: String
        var headers: [(name: String, value: String)] = []
        var grant: String? = nil
        var token: String?
        var rejected = false
    }

    static func bearer(_ id: String) -> String { "Bearer \(F.secret(id))" }
    static func basic(_ user: String, _ id: String) -> String {
        "Basic " + Data("\(user):\(F.secret(id))".utf8).base64EncodedString()
    }

    static let examples: [Example] = [
        Example(
            credentials: .api, path: "/aliases/tok_abc", headers: [("Authorization", bearer("creator"))],
            token: "creator"),
        Example(
            credentials: .api, path: "/aliases/tok_abc", headers: [("authorization", "bearer  \(F.secret("payer")) ")],
            token: "payer"),
        Example(
            credentials: .api, path: "/aliases/tok_abc", headers: [("Authorization", "Bearer wrong")], token: nil,
            rejected: true),
        Example(
            credentials: .api, path: "/aliases/tok_abc", headers: [("Authorization", basic("creator", "creator"))],
            token: nil, rejected: true),
        Example(credentials: .api, path: "/aliases/tok_abc", token: nil),
        // Proxy-Authorization names the caller only on the egress door.
        Example(
            credentials: .api, path: "/aliases/tok_abc", headers: [("Proxy-Authorization", bearer("creator"))],
            token: nil),
        // There Authorization belongs to the upstream.
        Example(
            credentials: .api, method: .POST, path: "/egress/psp/v1/charges",
            headers: [("Authorization", bearer("creator"))],
            token: nil),
        Example(
            credentials: .api, method: .POST, path: "/egress/psp/v1/charges",
            headers: [("Authorization", bearer("creator")), ("Proxy-Authorization", bearer("payer"))], token: "payer"),
        Example(
            credentials: .api, method: .POST, path: "/egress/psp",
            headers: [("Proxy-Authorization", basic("payer", "payer"))],
            token: "payer"),
        // Basic names the token: the id must be the secret's.
        Example(
            credentials: .api, method: .POST, path: "/egress/psp",
            headers: [("Proxy-Authorization", basic("creator", "payer"))],
            token: nil, rejected: true),
        // The forward-proxy door: the tunnel's grant, whatever the request says, while the token's
        // secret is the one that opened the tunnel.
        Example(credentials: .forwardProxy, method: .POST, path: "/v1/charges", grant: "payer", token: "payer"),
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges",
            grant: "payer\n" + String(repeating: "0", count: 64), token: nil, rejected: true),
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges",
            headers: [("Proxy-Authorization", bearer("creator"))], grant: "payer", token: "payer"),
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges", grant: "ghost", token: nil, rejected: true),
        // Else Proxy-Authorization, never Authorization.
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges",
            headers: [("Proxy-Authorization", bearer("creator"))], token: "creator"),
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges",
            headers: [("Authorization", bearer("creator"))],
            token: nil),
        Example(
            credentials: .forwardProxy, method: .POST, path: "/v1/charges",
            headers: [("Proxy-Authorization", "Bearer nope")],
            token: nil, rejected: true),
    ]

    @Test(arguments: examples)
    func theCallerIsIdentified(example: Example) {
        var context: RequestContext
        switch example.credentials {
        case .api:
            context = F.routed(example.method, example.path, headers: example.headers)
        case .forwardProxy:
            var request = F.request(example.method, example.path, headers: example.headers)
            // A grant as the door makes it (``TunnelGrant``) for a token id; a test's own as given.
            let grant = example.grant.map { id in
                id.contains("\n") ? id : F.authenticator.directory.token(id: id).map(TunnelGrant.make) ?? id
            }
            request.proxyTarget = ProxyTarget(scheme: "https", host: "api.psp.example", port: 443, tunnelGrant: grant)
            context = RequestContext(request, start: 0)
        }
        let step = AuthMiddleware(authenticator: F.authenticator, credentials: example.credentials)
        let refused = F.refusal(step, &context)
        #expect(refused == nil)
        #expect(context.identity.token?.id == example.token)
        #expect(context.identity.rejected == example.rejected)
    }
}

/// One request from the caller's bucket: per token, else per address; health probes and
/// Elements' assets are never counted.
@Suite struct RateLimitMiddlewareTests {
    typealias F = MiddlewareFixture

    /// A burst of `burst` and one request a minute, for anonymous callers and tokens alike.
    static func step(burst: Int, metrics: ServiceMetrics = ServiceMetrics()) -> RateLimitMiddleware {
        var limits = ServiceConfiguration.RateLimits()
        limits.anonymous = RateLimit(requestsPerMinute: 1, burst: burst)
        limits.token = RateLimit(requestsPerMinute: 1, burst: burst)
        return RateLimitMiddleware(rates: RequestRates(limiter: RateLimiter(), limits: limits, metrics: metrics))
    }

    /// The refusal of one request through `step`, nil when it may go.
    static func take(
        _ step: RateLimitMiddleware, _ method: HTTPMethod, _ path: String, address: String = "192.0.2.30",
        token: ServiceConfiguration.AccessToken? = nil
    ) -> CloakError? {
        var context = F.routed(method, path, address: address)
        if let token { context.identity = Identity(token: token, rejected: false) }
        return F.refusal(step, &context)
    }

    @Test func aBurstOfOneRefusesTheSecondRequestWithRetryAfter() throws {
        let metrics = ServiceMetrics()
        let step = Self.step(burst: 1, metrics: metrics)
        #expect(Self.take(step, .POST, "/aliases") == nil)
        let refused = Self.take(step, .POST, "/aliases")
        let error = try #require(refused)
        #expect(error.code == .tooManyRequests)
        #expect(error.code.rawValue == 1429)
        let wait = try #require(F.int(F.extra(error, "retryAfterSeconds")))
        #expect((1...60).contains(wait), "\(wait)")
        let response = HTTPResponse.error(error)
        #expect(response.status == 429)
        #expect(F.header(response, "Retry-After") == String(wait))
        #expect(
            String(decoding: metrics.exposition(), as: UTF8.self).contains(
                #"cloak_rate_limited_total{kind="anonymous"}"#))
        // Another address has a bucket of its own.
        #expect(Self.take(step, .POST, "/aliases", address: "192.0.2.31") == nil)
    }

    /// Review finding: a refused request is labelled `-` (metrics, the access log and the
    /// sandbox headers key on the label), as before the pipeline; an admitted one by its route.
    @Test func onlyAnAdmittedRequestIsLabelledByItsRoute() {
        let step = Self.step(burst: 1)
        var first = F.routed(.GET, "/aliases/tok_abc", address: "192.0.2.40")
        #expect(F.refusal(step, &first) == nil)
        #expect(first.template == "/aliases/{alias}")
        var second = F.routed(.GET, "/aliases/tok_abc", address: "192.0.2.40")
        #expect(F.refusal(step, &second)?.code == .tooManyRequests)
        #expect(second.template == "-")
        #expect(second.routeTemplate == "/aliases/{alias}")
    }

    /// Review finding: the probes' exemption follows the routed endpoint. A path that only
    /// decodes to `/healthz` (`/healthz%00x`, cut at the NUL) or a probe path on another method
    /// is counted like any request.
    @Test func onlyTheRoutedProbesAreExempt() {
        let step = Self.step(burst: 1)
        func take(_ method: HTTPMethod, rawPath: String, path: String) -> CloakError? {
            var request = F.request(method, path, address: "192.0.2.41")
            request.rawPath = rawPath
            var context = RequestContext(request, start: 0)
            _ = try? RoutingMiddleware(router: CloakService.router).request(&context)
            return F.refusal(step, &context)
        }
        #expect(take(.GET, rawPath: "/healthz%00x", path: "/healthz") == nil)
        #expect(take(.GET, rawPath: "/healthz%00x", path: "/healthz")?.code == .tooManyRequests)
        #expect(take(.POST, rawPath: "/healthz", path: "/healthz")?.code == .tooManyRequests)
        #expect(take(.GET, rawPath: "/healthz", path: "/healthz") == nil)
        #expect(take(.HEAD, rawPath: "/readyz", path: "/readyz") == nil)
    }

    @Test func aTokensBucketIsItsOwn() throws {
        let step = Self.step(burst: 1)
        #expect(Self.take(step, .GET, "/aliases/tok_abc", token: F.creator) == nil)
        let refused = Self.take(step, .GET, "/aliases/tok_abc", address: "192.0.2.99", token: F.creator)
        #expect(refused?.code == .tooManyRequests)
        // The address the token came from still has its anonymous request.
        #expect(Self.take(step, .GET, "/aliases/tok_abc") == nil)
    }

    @Test(arguments: ["/healthz", "/readyz"])
    func healthProbesAreNeverLimited(path: String) {
        let step = Self.step(burst: 1)
        let refusals = (0..<5).compactMap { _ in Self.take(step, .GET, path) }
        #expect(refusals.isEmpty)
    }

    @Test func elementsAssetsDoNotSpendTheAnonymousBudget() {
        let step = Self.step(burst: 1)
        let refusals = (0..<5).compactMap { _ in Self.take(step, .GET, "/elements/v1/cloak.js") }
        #expect(refusals.isEmpty)
        // The address's one request is still there for a limited Elements endpoint.
        #expect(Self.take(step, .GET, "/elements/v1/forms/checkout") == nil)
        #expect(Self.take(step, .GET, "/elements/v1/forms/checkout")?.code == .tooManyRequests)
    }

    @Test func onAnOpenEndpointOnlyACreatorTokenHasItsOwnBucket() {
        let step = Self.step(burst: 1)
        // The anonymous caller spends its address's request.
        #expect(Self.take(step, .POST, "/tokens") == nil)
        // A token without aliases:create counts as anonymous on an open endpoint: same bucket.
        #expect(Self.take(step, .POST, "/tokens", token: F.payer)?.code == .tooManyRequests)
        #expect(Self.take(step, .POST, "/forms/checkout/validate", token: F.revealer)?.code == .tooManyRequests)
        // A creator takes from its own.
        #expect(Self.take(step, .POST, "/tokens", token: F.creator) == nil)
        // Off the open endpoints, every token has its own.
        #expect(Self.take(step, .GET, "/aliases/tok_abc", token: F.payer) == nil)
        // A route's reveal needs the token's own scope: a revealing token keeps its own bucket on /proxy.
        #expect(Self.take(step, .POST, "/proxy/psp/charges", token: F.revealer) == nil)
    }
}
