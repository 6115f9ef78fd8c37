import CloakHTTP

/// The service's Prometheus metrics, served as text by `GET /metrics`.
///
/// - `cloak_requests_total{route, status}`: answered requests, by route template (never the raw
///   path, which could hold a value) and status code.
/// - `cloak_request_duration_seconds{route}`: time from arrival to answer, vault and upstream included.
///
/// Those two are counted per loop without a lock (``RequestMetrics``); the others are rare and
/// live in a ``MetricRegistry``.
final class ServiceMetrics: Sendable {
    let registry = MetricRegistry()
    /// The per-request pair, counted per loop (``RequestMetrics``); the rest lives in `registry`.
    let requests = RequestMetrics()
    /// The trace export's counts (read when `/metrics` is served); nil when tracing is off.
    let traces: TraceExport?

    init(traces: TraceExport? = nil) { self.traces = traces }

    /// Counts one answer; `loop` is the request's loop, where the answer is recorded.
    func record(route: String, status: Int, nanoseconds: Int64, loop: LoopHandle?) {
        requests.record(route: route, status: status, nanoseconds: Int(nanoseconds), loop: loop)
    }

    /// Counts a readiness check failed by a stalled loop.
    func loopStalled() {
        registry.increment(
            "cloak_readyz_loop_stalled_total",
            help: "Readiness checks failed because an event loop had not turned within server.loop_stall_s")
    }

    /// Counts an uploaded file by outcome (`stored`, `refused`, `failed`), and the bytes stored.
    func fileUploaded(_ outcome: String, bytes: Int = 0) {
        registry.increment(
            "cloak_files_uploads_total", help: "Files uploaded through forms, by outcome: stored, refused or failed",
            labels: ["outcome": outcome])
        if bytes > 0 {
            registry.increment(
                "cloak_files_stored_bytes_total", help: "Bytes of files stored (before sealing) since start",
                by: bytes)
        }
    }

    /// Counts a file revealed (`GET /files/{alias}`, a route's reveal) and its bytes.
    func fileRevealed(bytes: Int) { registry.fileRevealed(bytes: bytes) }

    /// Counts a reload (`result`: `applied` or `refused`).
    func configReloaded(_ result: String) {
        registry.increment(
            "cloak_config_reloads_total",
            help: "Configuration reloads (SIGHUP, cloak reload), by result: applied or refused",
            labels: ["result": result])
    }

    /// Counts a bucket past `limits.bucket_values_per_hour` (`format` is an alias format's name).
    func bucketLimited(_ format: String) {
        registry.increment(
            "cloak_bucket_value_limit_total",
            help:
                "Creates past limits.bucket_values_per_hour (a token aliased too many distinct values of one bucket in an hour), by format",
            labels: ["format": format])
    }

    /// Counts an anonymous request refused for a bucket's share (`format` is a format's name).
    func bucketFull(_ format: String) {
        registry.increment(
            "cloak_alias_bucket_refusals_total",
            help:
                "Anonymous requests refused because intents held their share of a bucket (auth.anonymous.max_bucket_share), by format",
            labels: ["format": format])
    }

    /// Counts a 429 for `kind` (`anonymous` or `token`; never a token id or an address).
    func rateLimited(_ kind: String) {
        registry.increment(
            "cloak_rate_limited_total", help: "Requests refused with 429, by kind of caller (anonymous or token)",
            labels: ["kind": kind])
    }

    /// Publishes the client-address refusals by reason code (read when `/metrics` is served).
    /// Publishes the BIN table a node serves: its version (0: none) and seconds since its import.
    /// The table is named by version and digest too (`cloak_bins_table`, one series): after a
    /// restore two tables can share a version, and nodes serving them must not look alike.
    func binTable(version: Int64?, digest: String?, importedAt: Int64?, now: Int64) {
        registry.set(
            "cloak_bins_version", help: "The BIN table this node serves: its version (0: none imported)",
            to: Int(version ?? 0))
        registry.replace(
            "cloak_bins_table",
            help: "The BIN table this node serves, named by its version and the start of its SHA-256 (1)",
            labels: ["version": String(version ?? 0), "sha256": digest ?? ""], to: 1)
        registry.set(
            "cloak_bins_age_seconds", help: "Seconds since the BIN table this node serves was imported (0: none)",
            to: importedAt.map { Int(max(0, now - $0)) } ?? 0)
    }

    /// The store's disk against `limits.disk_reserve_mib` (``DiskReserve``).
    func diskReserve(freeBytes: Int64?, below: Bool) {
        registry.set(
            "cloak_disk_free_bytes", help: "Free bytes on the store's disk (-1: not visible from this node)",
            to: freeBytes.map { Int($0) } ?? -1)
        registry.set(
            "cloak_disk_below_reserve",
            help: "1 while the store's disk is below limits.disk_reserve_mib (what grows the store gets 507)",
            to: below ? 1 : 0)
    }

    func clientAddressRefusals(_ counts: [String: Int]) {
        for (reason, count) in counts.sorted(by: { $0.key < $1.key }) {
            registry.set(
                "cloak_client_address_refused_total",
                help:
                    "PROXY headers refused (connection closed) and trusted proxies' X-Forwarded-For not taken (served as from the peer), by reason",
                labels: ["reason": reason], to: count)
        }
    }

    /// Publishes the log queue's dropped-line count (read when `/metrics` is served).
    func logLinesDropped(_ total: Int) {
        registry.set(
            "cloak_log_lines_dropped_total",
            help: "Log lines dropped because the log queue was full (standard output stalled)", to: total)
    }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] {
        Array((requests.exposition() + registry.exposition() + traceExposition()).utf8)
    }

    /// `cloak_trace_spans_exported_total`, `cloak_trace_spans_dropped_total{reason}` and
    /// `cloak_trace_export_failures_total`, when `telemetry.traces` is on.
    private func traceExposition() -> String {
        guard let counts = traces?.counters else { return "" }
        return """
            # HELP cloak_trace_spans_exported_total Spans the collector accepted
            # TYPE cloak_trace_spans_exported_total counter
            cloak_trace_spans_exported_total \(counts.exported)
            # HELP cloak_trace_spans_dropped_total Spans not exported: the queue was full (queue_full), the collector refused their batch or kept failing (export_failed), or it took the batch but rejected them (rejected)
            # TYPE cloak_trace_spans_dropped_total counter
            cloak_trace_spans_dropped_total{reason="queue_full"} \(counts.droppedQueueFull)
            cloak_trace_spans_dropped_total{reason="export_failed"} \(counts.droppedExportFailed)
            cloak_trace_spans_dropped_total{reason="rejected"} \(counts.droppedRejected)
            # HELP cloak_trace_export_failures_total Export attempts that failed (each retry counts)
            # TYPE cloak_trace_export_failures_total counter
            cloak_trace_export_failures_total \(counts.failedExports)

            """
    }
}
