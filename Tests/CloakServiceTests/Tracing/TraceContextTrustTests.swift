import CloakCore
import CloakHTTP
import CloakTesting
import Foundation
import Testing

@testable import CloakService

/// Whose trace context Cloak takes (issue 44, item 10): a caller's `traceparent`, `tracestate`
/// and `baggage` count only when `telemetry.traces.trust_incoming_context` trusts the caller
/// (by default: a valid token), never for coming through `server.trusted_proxies` (every
/// caller's peer is then the balancer); `baggage` goes upstream only on a route with
/// `forward_baggage: true`, and only a trusted caller's.
@Suite(.serialized, .tags(.processes, .sockets)) struct TraceContextTrustTests {
    static let plainRoute = "1b9e2f7c-3d4a-4e5b-8c6d-7e8f9a0b1c2d"
    static let baggageRoute = "2c0f3a8d-4e5b-4f6c-9d7e-8f9a0b1c2d3e"
    static let strangerTrace = "abababababababababababababababab"
    static let holderTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

    static func headers(trace: String, tag: String) -> [(String, String)] {
        [
            ("X-Forwarded-For", "203.0.113.7"), ("traceparent", "00-\(trace)-00f067aa0ba902b7-01"),
            ("tracestate", "vendor=\(tag)"), ("baggage", "tenant=\(tag)"),
        ]
    }

    // MARK: A real node behind a trusted proxy, sampling nothing it starts

    @Test func onlyATokenHoldersContextIsTakenAndBaggageOnlyWhereARouteForwardsIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let collector = RawUpstream()
        defer { collector.stop() }
        let upstream = RawUpstream()
        defer { upstream.stop() }
        let node = try CloakNode(store: "sqlite:\(directory.path)/cloak.db", directory: directory.path) { yaml in
            yaml.replacingOccurrences(of: "  trusted_proxies: [] ", with: "  trusted_proxies: [\"127.0.0.1\"] ")
                .replacingOccurrences(
                    of: "\nroutes: []\n",
                    with: """

                        routes:
                          - id: "\(Self.plainRoute)"
                            path: /plain
                            upstream: "http://127.0.0.1:\(upstream.port)/plain"
                          - id: "\(Self.baggageRoute)"
                            path: /baggage
                            upstream: "http://127.0.0.1:\(upstream.port)/baggage"
                            forward_baggage: true

                        """)
                + "\ntelemetry:\n  traces: {endpoint: \"http://127.0.0.1:\(collector.port)\", sample_ratio: 0}\n"
        }
        defer { node.stop() }
        let token = ("Authorization", "Bearer \(CloakNode.token)")

        /// The head the upstream got for one request through a route.
        func forwarded(_ path: String, _ headers: [(String, String)]) throws -> String {
            let before = upstream.text.utf8.count
            let answer = try node.client().request("POST", path, json: "{}", headers: headers)
            #expect(answer.status == 204, "\(path): \(answer.text)")
            #expect(Poll.until { upstream.text.utf8.count > before && upstream.text.hasSuffix("{}") })
            return String(decoding: Array(upstream.text.utf8.dropFirst(before)), as: UTF8.self).lowercased()
        }

        // A stranger behind the balancer, asking for sampling in a trace of its choosing: a new
        // trace, not kept at sample_ratio 0; nothing of its context goes upstream.
        for path in ["/proxy/plain", "/proxy/baggage"] {
            let head = try forwarded(path, Self.headers(trace: Self.strangerTrace, tag: "stranger"))
            #expect(!head.contains("traceparent:") && !head.contains("tracestate:"), "\(path): \(head)")
            #expect(!head.contains("baggage:"), "\(path): \(head)")
            #expect(!head.contains(Self.strangerTrace))
        }
        // A token holder behind the same balancer: its trace continues (its sampled flag wins
        // over sample_ratio 0), with its tracestate; its baggage only where the route says so.
        let plain = try forwarded("/proxy/plain", [token] + Self.headers(trace: Self.holderTrace, tag: "holder"))
        #expect(plain.contains("traceparent: 00-\(Self.holderTrace)-"), "\(plain)")
        #expect(plain.contains("tracestate: vendor=holder"), "\(plain)")
        #expect(!plain.contains("baggage:"), "\(plain)")
        let baggage = try forwarded("/proxy/baggage", [token] + Self.headers(trace: Self.holderTrace, tag: "holder"))
        #expect(baggage.contains("baggage: tenant=holder"), "\(baggage)")
        #expect(baggage.contains("traceparent: 00-\(Self.holderTrace)-"), "\(baggage)")

        // The export: the holder's two request spans in its trace; nothing of the stranger's.
        #expect(
            Poll.until {
                OTLPDecoding.spans(inHTTP: collector.bytes).filter { $0.name == "POST /proxy/{path...}" }.count >= 2
            })
        // The stranger's requests ended first: the exporter sends spans in the order they end,
        // so one of theirs would have arrived with or before the holder's.
        let spans = OTLPDecoding.spans(inHTTP: collector.bytes)
        let requests = spans.filter { $0.name == "POST /proxy/{path...}" }
        #expect(requests.count == 2 && requests.allSatisfy { $0.traceID == Self.holderTrace }, "\(requests)")
        #expect(!spans.contains { $0.traceID == Self.strangerTrace }, "\(spans)")
        #expect(!spans.contains { $0.traceID != Self.holderTrace }, "sample_ratio 0 keeps no trace Cloak starts")
    }

    // MARK: The step, as a table

    @Test(arguments: [
        (ServiceConfiguration.ContextTrust.authenticated, true, true),
        (.authenticated, false, false),
        (.always, false, true),
        (.always, true, true),
        (.never, true, false),
        (.never, false, false),
    ])
    func theStepTrustsByTheSettingAndTheToken(trust: ServiceConfiguration.ContextTrust, token: Bool, trusted: Bool) {
        var context = MiddlewareFixture.admitted(
            .POST, "/proxy/x", headers: [("traceparent", "00-\(Self.holderTrace)-00f067aa0ba902b7-01")],
            address: "127.0.0.1")
        if token { context.identity = Identity(token: MiddlewareFixture.creator, rejected: false) }
        _ = try? TracingMiddleware(tracer: nil, trust: trust).request(&context)
        #expect(context.trustsCallerContext == trusted)
    }

    @Test func baggageGoesOnlyThroughARouteThatForwardsItAndOnlyATrustedCallers() {
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("baggage", "tenant=x"), ("traceparent", "00-ab-cd-01"),
            ("tracestate", "v=1"),
        ]
        func route(forwardBaggage: Bool) -> Route {
            Route(
                id: Self.plainRoute, door: .inbound, matcher: .prefix("/proxy/plain"), methods: ["POST"],
                upstream: nil, forwardBaggage: forwardBaggage)
        }
        func names(_ route: Route, trusted: Bool) -> [String] {
            route.forwardedHeaders(headers, keepAuthorization: false, trustedContext: trusted)
                .map { $0.name.lowercased() }
        }
        #expect(names(route(forwardBaggage: false), trusted: true) == ["content-type"])
        #expect(names(route(forwardBaggage: true), trusted: false) == ["content-type"])
        #expect(names(route(forwardBaggage: true), trusted: true) == ["content-type", "baggage"])
    }

    // MARK: Configuration

    static func parse(_ yaml: String) -> (ServiceConfiguration?, [String]) {
        do {
            return (try ServiceConfiguration.parse(yaml: yaml, environment: [:]), [])
        } catch {
            return (nil, error.issues.map(\.description))
        }
    }

    static func withTraces(_ settings: String) -> String {
        TestServer.configurationWithTokens
            + "\ntelemetry:\n  traces: {endpoint: \"http://127.0.0.1:4318\"\(settings)}\n"
    }

    @Test func theSettingsAreReadAndBadValuesAreIssuesWithTheirPath() throws {
        #expect(Self.parse(Self.withTraces("")).0?.traces?.trustIncomingContext == .authenticated)
        for trust in ServiceConfiguration.ContextTrust.allCases {
            let (parsed, issues) = Self.parse(Self.withTraces(", trust_incoming_context: \(trust.rawValue)"))
            #expect(parsed?.traces?.trustIncomingContext == trust, "\(issues)")
        }
        let (_, issues) = Self.parse(Self.withTraces(", trust_incoming_context: proxies"))
        #expect(issues.contains { $0.hasPrefix("telemetry.traces.trust_incoming_context") }, "\(issues)")

        func routes(_ option: String) -> String {
            TestServer.configurationWithTokens.replacingOccurrences(
                of: "\nroutes: []\n",
                with: "\nroutes:\n  - {id: \"\(Self.plainRoute)\", path: /p, upstream: echo\(option)}\n")
        }
        #expect(Self.parse(routes("")).0?.routes.first?.forwardBaggage == false)
        #expect(Self.parse(routes(", forward_baggage: true")).0?.routes.first?.forwardBaggage == true)
        let (_, bad) = Self.parse(routes(", forward_baggage: sometimes"))
        #expect(bad.contains { $0.hasPrefix("routes[0].forward_baggage") }, "\(bad)")
    }
}

extension TraceContextTrustTests {
    /// `telemetry.traces`' TLS settings are read as a route's (`ca_file`, `client_cert`).
    @Test func theCollectorsTrustIsReadAsARoutesIs() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        func traces(_ endpoint: String, _ settings: String) -> String {
            TestServer.configurationWithTokens + "\ntelemetry:\n  traces: {endpoint: \"\(endpoint)\"\(settings)}\n"
        }
        let tls =
            ", ca_file: \"\(certificates.caFile)\", client_cert: {cert: \"\(certificates.clientCertificate)\", key: \"\(certificates.clientKey)\"}"
        let (parsed, issues) = Self.parse(traces("https://collector.internal:4318", tls))
        #expect(parsed?.traces?.caFile == certificates.caFile, "\(issues)")
        #expect(parsed?.traces?.clientCertificate?.privateKey == certificates.clientKey)
        #expect(parsed?.traces?.trustStamp != 0)
        let cases: [(String, String, String)] = [
            ("http://127.0.0.1:4318", tls, "telemetry.traces.endpoint"),
            ("https://c:4318", ", ca_file: /nonexistent.pem", "telemetry.traces.ca_file"),
            ("https://c:4318", ", ca_file: \"\(certificates.clientKey)\"", "telemetry.traces.ca_file"),
            (
                "https://c:4318", ", client_cert: {cert: \"\(certificates.clientCertificate)\"}",
                "telemetry.traces.client_cert"
            ),
            ("https://c:4318/v1?key=1", "", "telemetry.traces.endpoint"),
            ("ftp://c:4318", "", "telemetry.traces.endpoint"),
            ("https://c:4318", ", headers: {x: y}", "telemetry.traces"),
        ]
        for (endpoint, settings, path) in cases {
            let (_, bad) = Self.parse(traces(endpoint, settings))
            #expect(bad.contains { $0.hasPrefix(path) }, "\(endpoint) \(settings): \(bad)")
        }
    }
}
