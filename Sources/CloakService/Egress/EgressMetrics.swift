import Prometheus
import Synchronization

/// Egress metrics, in the service's registry:
/// - `cloak_egress_requests_total{route, status}`: egress requests by configured route id ("-"
///   when none was chosen: an id the client sent is never a label) and the status answered;
/// - `cloak_egress_revealed_total{route}`: aliases revealed on the way out.
final class EgressMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let counters = Mutex<[String: Counter]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func record(route: String, status: Int, revealed: Int) {
        let (requests, reveals) = counters.withLock { cache -> (Counter, Counter) in
            let key = "\(route)|\(status)"
            let requests =
                cache[key]
                ?? registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "cloak", metricName: "egress_requests", unitName: "total",
                        helpText: "Egress requests by route and status"),
                    labels: [("route", route), ("status", String(status))])
            cache[key] = requests
            let reveals =
                cache[route]
                ?? registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "cloak", metricName: "egress_revealed", unitName: "total",
                        helpText: "Aliases revealed on the way out, by route"),
                    labels: [("route", route)])
            cache[route] = reveals
            return (requests, reveals)
        }
        requests.increment()
        if revealed > 0 { reveals.increment(by: Int64(revealed)) }
    }
}
