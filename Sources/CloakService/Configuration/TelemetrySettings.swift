extension ServiceConfiguration {
    /// `telemetry.traces`: OpenTelemetry spans over OTLP/HTTP (protobuf); none by default, and then
    /// nothing of tracing runs on the request path.
    package struct TraceSettings: Sendable, Equatable {
        /// The collector's OTLP/HTTP base URL (`http://collector:4318`); spans go to `/v1/traces`.
        package var endpoint: String
        /// The share of new traces kept (a caller's sampled flag decides for a continued one).
        package var sampleRatio: Double = 0.1
        package var serviceName: String = "cloak"
    }

    /// `telemetry: {traces: {endpoint, sample_ratio, service_name}}`.
    static func readTelemetry(_ node: ConfigNode?, into config: inout ServiceConfiguration, _ r: ConfigReader) {
        guard let telemetry = r.mapping(node, at: "telemetry", allowed: ["traces"]),
            let traces = r.mapping(
                telemetry["traces"], at: "telemetry.traces", allowed: ["endpoint", "sample_ratio", "service_name"])
        else { return }
        guard let endpoint = r.string(traces["endpoint"], at: "telemetry.traces.endpoint") else {
            r.issue("telemetry.traces.endpoint", "is required (the collector's OTLP/HTTP URL)", traces["endpoint"])
            return
        }
        guard endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://"), endpoint.count > 8 else {
            r.issue("telemetry.traces.endpoint", "expected an http:// or https:// URL", traces["endpoint"])
            return
        }
        var settings = TraceSettings(endpoint: endpoint)
        r.double(
            traces["sample_ratio"], at: "telemetry.traces.sample_ratio", min: 0, max: 1, into: &settings, \.sampleRatio)
        if let name = r.string(traces["service_name"], at: "telemetry.traces.service_name") {
            if name.isEmpty || name.count > 128 {
                r.issue("telemetry.traces.service_name", "expected 1 to 128 characters", traces["service_name"])
            }
            settings.serviceName = name
        }
        config.traces = settings
    }
}
