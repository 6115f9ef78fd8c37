import CloakCore
import CloakHTTP
import Testing

@testable import CloakService

/// ``Route``: one model for inbound and egress routes; what it takes, and what it sends on.
struct RouteTests {
    static let upstream = Route.Upstream(scheme: .https, host: "psp.example", port: 443, path: "/api/")

    static func inbound(_ prefix: String = "/proxy/pay") -> Route {
        Route(
            id: "5f0c6b7e-0000-4000-8000-000000000001", door: .inbound, matcher: .prefix(prefix),
            methods: ["POST"], upstream: upstream, headers: [("X-Api-Key", "configured")])
    }

    static func egress() throws -> Route {
        Route(
            id: "stripe", door: .egress, matcher: .paths([try PathGlob("/v1/*")]), methods: ["POST", "GET"],
            upstream: upstream)
    }

    @Test(arguments: [
        ("/proxy/pay", true), ("/proxy/pay/", true), ("/proxy/pay/x/y", true), ("/proxy/payments", false),
        ("/proxy", false), ("/pay", false),
    ])
    func anInboundRouteTakesItsPrefixAndWhatIsUnderIt(path: String, taken: Bool) {
        #expect(Self.inbound().matches(path: path) == taken)
        #expect(Self.inbound().allows(method: "POST", path: path) == taken)
        #expect(!Self.inbound().allows(method: "GET", path: path))
    }

    @Test func anEgressRouteTakesItsGlobsAndMethods() throws {
        let route = try Self.egress()
        #expect(route.allows(method: "POST", path: "/v1/charges"))
        #expect(!route.allows(method: "DELETE", path: "/v1/charges"))
        #expect(!route.allows(method: "POST", path: "/v2/charges"))
        #expect(route.scope == "egress:stripe" && Self.inbound().scope == nil)
        #expect(route.goes(to: "https", host: "psp.example", port: 443))
        #expect(!route.goes(to: "http", host: "psp.example", port: 443))
        #expect(!route.goes(to: "https", host: "psp.example", port: 8443))
    }

    static let clientHeaders: [(name: String, value: String)] = [
        ("Host", "cloak"), ("Content-Length", "12"), ("X-Route-Id", "x"), ("Authorization", "Basic abc"),
        ("Connection", "close"), ("Content-Type", "text/plain"), ("X-Api-Key", "client's"), ("Accept", "*/*"),
    ]

    @Test func framingAndAuthorizationStayBehindByDoor() throws {
        let inbound = Self.inbound().forwardedHeaders(Self.clientHeaders, keepAuthorization: false)
        #expect(inbound.map(\.name) == ["Content-Type", "X-Api-Key", "Accept"])
        let kept = Self.inbound().forwardedHeaders(Self.clientHeaders, keepAuthorization: true)
        #expect(kept.map(\.name) == ["Authorization", "Content-Type", "X-Api-Key", "Accept"])
        // An egress route does not name itself with X-Route-Id: the client's goes on as sent.
        let egress = try Self.egress().forwardedHeaders(Self.clientHeaders, keepAuthorization: true)
        #expect(egress.map(\.name) == ["X-Route-Id", "Authorization", "Content-Type", "X-Api-Key", "Accept"])
    }

    @Test func theRoutesOwnHeadersAndCloaksBodyTypeWin() {
        let route = Self.inbound()
        let forwarded = route.forwardedHeaders(Self.clientHeaders, keepAuthorization: false)
        let sent = route.sentHeaders(forwarded, contentType: "application/json")
        #expect(sent.filter { $0.name == "Content-Type" }.map(\.value) == ["application/json"])
        #expect(sent.filter { $0.name == "X-Api-Key" }.map(\.value) == ["configured"])
        #expect(sent.last?.name == "X-Api-Key")
    }

    @Test(
        arguments: [
            ("/api/", "", nil, "/api/"), ("/api/", "/charges", nil, "/api/charges"),
            ("/api", "/charges", "a=1", "/api/charges?a=1"), ("/", "/v1/charges", nil, "/v1/charges"),
        ] as [(String, String, String?, String)])
    func theTargetJoinsTheUpstreamPathWithTheRest(base: String, rest: String, query: String?, target: String) {
        var upstream = Self.upstream
        upstream.path = base
        #expect(Route.target(upstream, rest: rest, query: query) == target)
    }

    @Test func theUpstreamRequestCarriesTheRoutesTrust() {
        var upstream = Self.upstream
        upstream.allowPrivate = false
        upstream.caFile = "/ca.pem"
        upstream.responseTimeoutSeconds = 7
        let request = Route.request(to: upstream, method: .POST, target: "/x", headers: [], body: [1])
        #expect(!request.allowPrivate && request.caFile == "/ca.pem" && request.timeoutSeconds == 7)
        #expect(request.host == "psp.example" && request.port == 443 && request.target == "/x")
    }
}
