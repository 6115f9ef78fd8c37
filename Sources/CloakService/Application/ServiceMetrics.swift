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
    /// The trace export's counts (read when `/metrics` is served); nil when tracing is off.
    let traces: TraceExport?

    init(traces: TraceExport? = nil) { self.traces = traces }

    /// Counts one answer; `loop` is the request's loop, where the answer is recorded.
    func record(route: String, status: Int, nanoseconds: Int64, loop: LoopHandle?) {
        requests.record(route: route, status: status, nanoseconds: Int(nanoseconds), loop: loop)
    }

    private static var rateLimited: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "rate_limited", unitName: "total",
            helpText: "Requests refused with 429, by kind of caller (anonymous or token)")
    }
    private static var logLinesDropped: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "log_lines_dropped", unitName: "total",
            helpText: "Log lines dropped because the log queue was full (standard output stalled)")
    }
    private let rateLimitedCounters = Mutex<[String: Counter]>([:])

    private static var loopStalls: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "readyz_loop_stalled", unitName: "total",
            helpText: "Readiness checks failed because an event loop had not turned within server.loop_stall_s")
    }
    private var loopStallCounter: Counter { registry.makeCounter(descriptor: Self.loopStalls) }

    private static var configReloads: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "config_reloads", unitName: "total",
            helpText: "Configuration reloads (SIGHUP, cloak reload), by result: applied or refused")
    }
    private let configReloadCounters = Mutex<[String: Counter]>([:])

    /// Counts a reload (`result`: `applied` or `refused`).
    func configReloaded(_ result: String) {
        Self.counter(in: configReloadCounters, label: ("result", result)) {
            registry.makeCounter(descriptor: Self.configReloads, labels: [("result", result)])
        }.increment()
    }

    private static var bucketLimited: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "bucket_value_limit", unitName: "total",
            helpText:
                "Creates past limits.bucket_values_per_hour (a token aliased too many distinct values of one bucket in an hour), by format"
        )
    }
    private let bucketLimitedCounters = Mutex<[String: Counter]>([:])

    /// Counts a bucket past `limits.bucket_values_per_hour` (`format` is an alias format's name).
    func bucketLimited(_ format: String) {
        Self.counter(in: bucketLimitedCounters, label: ("format", format)) {
            registry.makeCounter(descriptor: Self.bucketLimited, labels: [("format", format)])
        }.increment()
    }

    private static var bucketRefusals: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "alias_bucket_refusals", unitName: "total",
            helpText:
                "Anonymous requests refused because intents held their share of a bucket (auth.anonymous.max_bucket_share), by format"
        )
    }
    private let bucketRefusalCounters = Mutex<[String: Counter]>([:])

    /// Counts an anonymous request refused for a bucket's share (`format` is a format's name).
    func bucketFull(_ format: String) {
        Self.counter(in: bucketRefusalCounters, label: ("format", format)) {
            registry.makeCounter(descriptor: Self.bucketRefusals, labels: [("format", format)])
        }.increment()
    }

    /// Counts a readiness check failed by a stalled loop.
    func loopStalled() { loopStallCounter.increment() }

    /// Counts a 429 for `kind` (`anonymous` or `token`; never a token id or an address).
    func rateLimited(_ kind: String) {
        Self.counter(in: rateLimitedCounters, label: ("kind", kind)) {
            registry.makeCounter(descriptor: Self.rateLimited, labels: [("kind", kind)])
        }.increment()
    }

    /// The counter of one label value, made once and kept in `cache`.
    private static func counter(
        in cache: borrowing Mutex<[String: Counter]>, label: (name: String, value: String),
        make: () -> Counter
    ) -> Counter {
        cache.withLock { cache in
            if let found = cache[label.value] { return found }
            let made = make()
            cache[label.value] = made
            return made
        }
    }

    private static var clientAddressRefused: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "cloak", metricName: "client_address_refused", unitName: "total",
            helpText:
                "PROXY headers refused (connection closed) and trusted proxies' X-Forwarded-For not taken (served as from the peer), by reason"
        )
    }

    /// Publishes the client-address refusals by reason code (read when `/metrics` is served).
    func clientAddressRefusals(_ counts: [String: Int]) {
        for (reason, count) in counts {
            registry.makeGauge(descriptor: Self.clientAddressRefused, labels: [("reason", reason)]).set(Double(count))
        }
    }

    /// Publishes the log queue's dropped-line count (read when `/metrics` is served).
    func logLinesDropped(_ total: Int) {
        let gauge = registry.makeGauge(descriptor: Self.logLinesDropped)
        gauge.set(Double(total))
    }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] {
        Array(requests.exposition().utf8) + registry.emitToBuffer() + Array(traceExposition().utf8)
    }

    /// `cloak_trace_spans_exported_total`, `cloak_trace_spans_dropped_total{reason}` and
    /// `cloak_trace_export_failures_total`, when `telemetry.traces` is on.
    private func traceExposition() -> String {
        guard let counts = traces?.counters else { return "" }
        return """
            # HELP cloak_trace_spans_exported_total Spans the collector accepted
            # TYPE cloak_trace_spans_exported_total counter
            cloak_trace_spans_exported_total \(counts.exported)
            # HELP cloak_trace_spans_dropped_total Spans not exported: the queue was full (queue_full), or the collector refused their batch or kept failing (export_failed)
            # TYPE cloak_trace_spans_dropped_total counter
            cloak_trace_spans_dropped_total{reason="queue_full"} \(counts.droppedQueueFull)
            cloak_trace_spans_dropped_total{reason="export_failed"} \(counts.droppedExportFailed)
            # HELP cloak_trace_export_failures_total Export attempts that failed (each retry counts)
            # TYPE cloak_trace_export_failures_total counter
            cloak_trace_export_failures_total \(counts.failedExports)

            """
    }
}
