import CloakHTTP

extension ServiceConfiguration {
    /// `telemetry.traces`: OpenTelemetry spans over OTLP/HTTP (protobuf); none by default, and then
    /// nothing of tracing runs on the request path.
    package struct TraceSettings: Sendable, Equatable {
        /// The collector's OTLP/HTTP base URL (`http://collector:4318`); spans go to `/v1/traces`.
        package var endpoint: String
        /// The share of new traces kept (a caller's sampled flag decides for a continued one).
        package var sampleRatio: Double = 0.1
        package var serviceName: String = "cloak"
        /// Whose trace context Cloak takes (`trust_incoming_context`, default `authenticated`).
        package var trustIncomingContext = ContextTrust.authenticated
        /// For an https endpoint: trusted CAs (PEM; the system's when nil), as a route's `ca_file`.
        package var caFile: String?
        /// Presented to a collector that asks for one (mutual TLS), as a route's `client_cert`.
        package var clientCertificate: UpstreamRequest.ClientCertificate?
        /// Changes with those files' contents (``Route/trustStamp(of:)``).
        package var trustStamp = 0
    }

    /// `telemetry.traces.trust_incoming_context`: which callers' W3C trace context (`traceparent`,
    /// `tracestate`, and `baggage` for a route with `forward_baggage`) Cloak takes. Anyone else's
    /// is dropped: Cloak starts its own trace, samples it at `sample_ratio`, and forwards nothing
    /// of the caller's. The peer's address decides nothing: behind `server.trusted_proxies` every
    /// caller comes from the balancer.
    package enum ContextTrust: String, Sendable, Equatable, CaseIterable {
        /// Callers that presented a valid token (the default).
        case authenticated
        /// Every caller: only where every request reaches Cloak through a gateway that sets or
        /// strips these headers itself.
        case always
        /// No caller: every trace starts at Cloak.
        case never

        /// Whether a caller's context is taken: `hasToken` when it presented a valid token.
        func trusts(hasToken: Bool) -> Bool {
            switch self {
            case .authenticated: return hasToken
            case .always: return true
            case .never: return false
            }
        }
    }

    /// `telemetry: {traces: {endpoint, sample_ratio, service_name, trust_incoming_context,
    /// ca_file, client_cert: {cert, key}}}`.
    static func readTelemetry(_ node: ConfigNode?, into config: inout ServiceConfiguration, _ r: ConfigReader) {
        guard let telemetry = r.mapping(node, at: "telemetry", allowed: ["traces"]),
            let traces = r.mapping(
                telemetry["traces"], at: "telemetry.traces",
                allowed: [
                    "endpoint", "sample_ratio", "service_name", "trust_incoming_context", "ca_file", "client_cert",
                ])
        else { return }
        guard let endpoint = r.string(traces["endpoint"], at: "telemetry.traces.endpoint") else {
            r.issue("telemetry.traces.endpoint", "is required (the collector's OTLP/HTTP URL)", traces["endpoint"])
            return
        }
        guard let parsed = UpstreamRequest.parse(url: endpoint), !endpoint.contains("?"), !endpoint.contains("#"),
            endpoint.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else {
            r.issue(
                "telemetry.traces.endpoint", "expected an http:// or https:// URL (no query)", traces["endpoint"])
            return
        }
        var settings = TraceSettings(endpoint: endpoint)
        let (caFile, client) = Route.readTrust(traces, at: "telemetry.traces", r)
        if parsed.scheme == .http && (caFile != nil || client != nil) {
            r.issue("telemetry.traces.endpoint", "ca_file and client_cert need an https:// endpoint")
        }
        settings.caFile = caFile
        settings.clientCertificate = client
        settings.trustStamp = Route.trustStamp(of: [caFile, client?.certificateChain, client?.privateKey])
        r.double(
            traces["sample_ratio"], at: "telemetry.traces.sample_ratio", min: 0, max: 1, into: &settings, \.sampleRatio)
        if let name = r.string(traces["service_name"], at: "telemetry.traces.service_name") {
            if name.isEmpty || name.count > 128 {
                r.issue("telemetry.traces.service_name", "expected 1 to 128 characters", traces["service_name"])
            }
            settings.serviceName = name
        }
        if let text = r.string(traces["trust_incoming_context"], at: "telemetry.traces.trust_incoming_context") {
            if let trust = ContextTrust(rawValue: text) {
                settings.trustIncomingContext = trust
            } else {
                r.issue(
                    "telemetry.traces.trust_incoming_context", "expected authenticated, always or never",
                    traces["trust_incoming_context"])
            }
        }
        config.traces = settings
    }
}
