/// Egress metrics, in the service's registry:
/// - `cloak_egress_requests_total{route, status}`: egress requests by configured route id ("-"
///   when none was chosen: an id the client sent is never a label) and the status answered;
/// - `cloak_egress_revealed_total{route}`: aliases revealed on the way out.
final class EgressMetrics: Sendable {
    private let registry: MetricRegistry

    init(registry: MetricRegistry) {
        self.registry = registry
    }

    func record(route: String, status: Int, revealed: Int) {
        registry.increment(
            "cloak_egress_requests_total", help: "Egress requests by route and status",
            labels: ["route": route, "status": String(status)])
        // Even by 0: a route's series exists from its first request, as a counter's should.
        registry.increment(
            "cloak_egress_revealed_total", help: "Aliases revealed on the way out, by route", labels: ["route": route],
            by: revealed)
    }
}
