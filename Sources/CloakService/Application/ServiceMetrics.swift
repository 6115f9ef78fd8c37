import Prometheus
import Synchronization

/// The service's Prometheus metrics, served as text by `GET /metrics`.
///
/// - `cloak_requests_total{route, status}`: answered requests, by route template (never the raw
///   path, which could hold a value) and status code.
/// - `cloak_request_duration_seconds{route}`: time from arrival to answer, vault and upstream included.
final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private static let buckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    // MetricNameDescriptor is not Sendable, so these are made when needed (a few strings).
    private static var requests: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "requests", unitName: "total",
                             helpText: "Answered requests by route and status")
    }
    private static var duration: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "request_duration", unitName: "seconds",
                             helpText: "Time from arrival to answer")
    }

    private struct Key: Hashable {
        let route: String
        let status: Int
    }

    /// The collectors already made, so a request costs one dictionary lookup, not a registry call.
    private let collectors = Mutex<[Key: (counter: Counter, histogram: DurationHistogram)]>([:])

    func record(route: String, status: Int, nanoseconds: Int64) {
        let key = Key(route: route, status: status)
        let pair = collectors.withLock { cache in
            if let found = cache[key] { return found }
            let made = (registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("status", String(status))]),
                        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("route", route)], buckets: Self.buckets))
            cache[key] = made
            return made
        }
        pair.counter.increment()
        pair.histogram.recordNanoseconds(nanoseconds)
    }

    private static var rateLimited: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "rate_limited", unitName: "total",
                             helpText: "Requests refused with 429, by kind of caller (anonymous or token)")
    }
    private static var logLinesDropped: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "log_lines_dropped", unitName: "total",
                             helpText: "Log lines dropped because the log queue was full (standard output stalled)")
    }
    private let rateLimitedCounters = Mutex<[String: Counter]>([:])

    /// Counts a 429 for `kind` (`anonymous` or `token`; never a token id or an address).
    func rateLimited(_ kind: String) {
        let counter = rateLimitedCounters.withLock { cache in
            if let found = cache[kind] { return found }
            let made = registry.makeCounter(descriptor: Self.rateLimited, labels: [("kind", kind)])
            cache[kind] = made
            return made
        }
        counter.increment()
    }

    /// Publishes the log queue's dropped-line count (read when `/metrics` is served).
    func logLinesDropped(_ total: Int) {
        let gauge = registry.makeGauge(descriptor: Self.logLinesDropped)
        gauge.set(Double(total))
    }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] { registry.emitToBuffer() }
}
