import Synchronization

/// Egress metrics, in the service's registry:
/// - `cloak_egress_requests_total{route, status}`: egress requests by configured route id ("-"
///   when none was chosen: an id the client sent is never a label) and the status answered;
/// - `cloak_egress_revealed_total{route}`: aliases revealed on the way out.
///
/// A request's two series are kept per route and status: counting one is a dictionary lookup and
/// an atomic add, no label rendered.
final class EgressMetrics: Sendable {
    private let registry: MetricRegistry
    private struct Key: Hashable {
        let route: String
        let status: Int
    }
    private let series = Mutex<[Key: (requests: MetricRegistry.Series, revealed: MetricRegistry.Series)]>([:])

    init(registry: MetricRegistry) {
        self.registry = registry
    }

    /// Counts a file a route revealed upstream.
    func fileRevealed(bytes: Int) { registry.fileRevealed(bytes: bytes) }

    func record(route: String, status: Int, revealed: Int) {
        let key = Key(route: route, status: status)
        let pair =
            series.withLock { $0[key] }
            ?? {
                // The revealed series exists from a route's first request, as a counter's should.
                let made = (
                    requests: registry.series(
                        "cloak_egress_requests_total", help: "Egress requests by route and status", kind: .counter,
                        labels: ["route": route, "status": String(status)]),
                    revealed: registry.series(
                        "cloak_egress_revealed_total", help: "Aliases revealed on the way out, by route",
                        kind: .counter,
                        labels: ["route": route])
                )
                series.withLock { $0[key] = made }
                return made
            }()
        pair.requests.add(1)
        if revealed > 0 { pair.revealed.add(revealed) }
    }
}
