import CloakHTTP
import Prometheus
import Synchronization

/// The service's Prometheus metrics, served as text by `GET /metrics`.
///
/// - `cloak_requests_total{route, status}`: answered requests, by route template (never the raw
///   path, which could hold a value) and status code.
/// - `cloak_request_duration_seconds{route}`: time from arrival to answer, vault and upstream included.
///
/// Those two are counted per loop without a lock (``RequestMetrics``); the others are rare and
/// live in a swift-prometheus registry.
final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// The per-request pair, counted per loop (``RequestMetrics``); the rest lives in `registry`.
    let requests = RequestMetrics()

    /// Counts one answer; `loop` is the request's loop, where the answer is recorded.
    func record(route: String, status: Int, nanoseconds: Int64, loop: LoopHandle?) {
        requests.record(route: route, status: status, nanoseconds: Int(nanoseconds), loop: loop)
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

    private static var loopStalls: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "readyz_loop_stalled", unitName: "total",
                             helpText: "Readiness checks failed because an event loop had not turned within server.loop_stall_s")
    }
    private var loopStallCounter: Counter { registry.makeCounter(descriptor: Self.loopStalls) }

    private static var bucketLimited: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cloak", metricName: "bucket_value_limit", unitName: "total",
                             helpText: "Creates refused because a token aliased too many distinct values of one format-preserving bucket in an hour (limits.bucket_values_per_hour), by format")
    }
    private let bucketLimitedCounters = Mutex<[String: Counter]>([:])

    /// Counts a create refused by the bucket limit (`format` is an alias format's name).
    func bucketLimited(_ format: String) {
        let counter = bucketLimitedCounters.withLock { cache in
            if let found = cache[format] { return found }
            let made = registry.makeCounter(descriptor: Self.bucketLimited, labels: [("format", format)])
            cache[format] = made
            return made
        }
        counter.increment()
    }

    /// Counts a readiness check failed by a stalled loop.
    func loopStalled() { loopStallCounter.increment() }

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
    func exposition() -> [UInt8] { Array(requests.exposition().utf8) + registry.emitToBuffer() }
}
