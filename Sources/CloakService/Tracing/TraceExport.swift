import CloakCore
import CloakHTTP
import Dispatch
import Foundation
import Logging
import Synchronization

/// The export of `telemetry.traces`: ended spans wait in a bounded queue and leave in batches,
/// as OTLP/HTTP (`POST {endpoint}/v1/traces`, `application/x-protobuf`), through Cloak's own
/// upstream client on an event loop of its own (``DetachedLoop``): the same HTTP/1.1 client,
/// TLS (OpenSSL, verified; a client certificate for mutual TLS) and pooling as routes have.
///
/// - The queue holds at most ``maxQueuedSpans``; a span ended while it is full is dropped and
///   counted (`cloak_trace_spans_dropped_total{reason="queue_full"}`), so a collector that is
///   slow or down costs no memory beyond it and no time on the request path.
/// - A batch (at most ``maxBatchSpans``) leaves when that many are queued or ``scheduleDelay``
///   after the last one left. A batch the collector refuses, or that keeps failing, is dropped
///   and counted (`reason="export_failed"`); ``ExportRetry`` decides when to try again.
/// - ``stop(seconds:)`` sends what is queued, within its deadline.
///
/// Its own thread waits for work and drives each export to its end; the loop's thread only does
/// the I/O. Nothing of it exists unless the configuration asks for traces.
package final class TraceExport: Sendable {
    package static let maxQueuedSpans = 2048
    package static let maxBatchSpans = 512
    static let scheduleDelay = 1.0
    static let exportTimeout = 10.0

    /// Counts for `/metrics`.
    package struct Counts: Sendable {
        package var exported = 0
        package var droppedQueueFull = 0
        package var droppedExportFailed = 0
        /// Spans the collector took the batch of but refused (its `partial_success`).
        package var droppedRejected = 0
        package var failedExports = 0
    }

    let tracer: CloakTracer
    private let queue: Queue
    private let settings: ServiceConfiguration.TraceSettings
    private let target: (scheme: UpstreamRequest.Scheme, host: String, port: Int, path: String)
    private let encoding: OTLPTraceEncoding
    /// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (or `OTEL_EXPORTER_OTLP_HEADERS`): a collector's key,
    /// sent with every export and never logged.
    private let headers: [(name: String, value: String)]
    private let loop: DetachedLoop
    private let logger: Logger
    private let counts = Mutex(Counts())
    private let stopping = Atomic<Bool>(false)
    private let stopDeadline = Mutex<DispatchTime>(.distantFuture)
    /// Signalled once a stop is asked (cuts a pause between retries short).
    private let stopped = DispatchSemaphore(value: 0)
    /// Signalled when the thread ended.
    private let finished = DispatchSemaphore(value: 0)
    /// Whether the last export failed (to log a change once, not every batch).
    private let failing = Atomic<Bool>(false)
    /// Whether a partial success was logged (once a process).
    private let rejectionLogged = Atomic<Bool>(false)

    /// Spans ready to leave together: their `ScopeSpans.spans` fields back to back.
    struct Batch {
        var fields = ProtobufWriter(capacity: 64 << 10)
        var count = 0
    }

    /// The spans waiting to leave, in batches filled as they end. Each span is encoded by the
    /// thread that ended it and copied into the open batch, so what crosses to the export's
    /// thread is a batch's one buffer; `wake` tells that thread a batch is full.
    final class Queue: SpanSink {
        let wake = DispatchSemaphore(value: 0)
        /// Spans dropped because the queue was full.
        let dropped = Atomic<Int>(0)

        private struct State {
            var batches: [Batch] = []
            var count = 0
            /// Emptied batches the export gave back, their buffers kept: a batch filled on a
            /// loop reuses one rather than allocate (and grow) a buffer under the lock.
            var spares: [Batch] = []
        }
        /// Most emptied batches kept for reuse.
        static let maxSpares = 2
        private let state = Mutex(State())

        func add(_ span: FinishedSpan) {
            // A full queue costs a span nothing but the count (no encoding for nothing).
            guard state.withLock({ $0.count < TraceExport.maxQueuedSpans }) else {
                dropped.add(1, ordering: .relaxed)
                return
            }
            let encoded = OTLPTraceEncoding.span(span)
            let outcome = state.withLock { state -> (kept: Bool, full: Bool) in
                guard state.count < TraceExport.maxQueuedSpans else { return (false, false) }
                if state.batches.last.map({ $0.count >= TraceExport.maxBatchSpans }) ?? true {
                    state.batches.append(state.spares.popLast() ?? Batch())
                }
                let last = state.batches.count - 1
                state.batches[last].fields.field(2, encoded)  // ScopeSpans.spans
                state.batches[last].count += 1
                state.count += 1
                return (true, state.batches[last].count == TraceExport.maxBatchSpans)
            }
            if !outcome.kept {
                dropped.add(1, ordering: .relaxed)
            } else if outcome.full {
                wake.signal()
            }
        }

        /// The oldest batch (only a full one when `fullOnly`), or nil when none waits.
        func take(fullOnly: Bool = false) -> Batch? {
            state.withLock { state in
                guard let first = state.batches.first, !fullOnly || first.count >= TraceExport.maxBatchSpans else {
                    return nil
                }
                let batch = state.batches.removeFirst()
                state.count -= batch.count
                return batch
            }
        }

        var count: Int { state.withLock { $0.count } }

        /// Takes back a batch the export sent (or dropped), emptied, for reuse.
        func recycle(_ batch: consuming Batch) {
            var batch = batch
            batch.fields.removeAll()
            batch.count = 0
            state.withLock { state in
                if state.spares.count < Self.maxSpares { state.spares.append(batch) }
            }
        }
    }

    /// Starts the export's loop and thread (nothing is sent before a span ends).
    package init(
        _ settings: ServiceConfiguration.TraceSettings, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        let variable = ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"].first {
            environment[$0] != nil
        }
        if let variable {
            guard let parsed = Self.headers(environment[variable] ?? "") else {
                throw TraceExportError.headers(variable)
            }
            headers = parsed
        } else {
            headers = []
        }
        guard let target = UpstreamRequest.parse(url: settings.endpoint) else {
            throw TraceExportError.endpoint
        }
        var path = target.path
        while path.hasSuffix("/") { path.removeLast() }
        // A base URL, as the setting says; one that already names the traces path is taken as is.
        if !path.hasSuffix("/v1/traces") { path += "/v1/traces" }
        self.target = (target.scheme, target.host, target.port, path)
        self.settings = settings
        self.logger = logger
        guard let resource = Self.headers(environment["OTEL_RESOURCE_ATTRIBUTES"] ?? "", asHeaders: false) else {
            throw TraceExportError.resourceAttributes
        }
        self.encoding = OTLPTraceEncoding(serviceName: settings.serviceName, attributes: resource)
        do { loop = try DetachedLoop() } catch { throw TraceExportError.loop("\(error)") }
        let queue = Queue()
        self.queue = queue
        self.tracer = CloakTracer(sink: queue)
        if !headers.isEmpty && target.scheme == .http {
            logger.warning(
                "trace export headers go to the collector in clear text: use an https:// endpoint",
                metadata: ["endpoint": .string(endpointForLogs)])
        }
        let thread = Thread { [self] in run() }
        thread.name = "cloak-trace-export"
        thread.start()
    }

    package var counters: Counts {
        var current = counts.withLock { $0 }
        current.droppedQueueFull = queue.dropped.load(ordering: .relaxed)
        return current
    }

    /// Sends what is queued (at most `seconds`) and stops; again, nothing.
    package func stop(seconds: Double = 5) {
        let deadline = DispatchTime.now() + seconds
        // The deadline before the flag: whoever sees the flag sees the deadline.
        let first = stopDeadline.withLock { current -> Bool in
            guard current == .distantFuture else { return false }
            current = deadline
            return true
        }
        guard first else { return }
        stopping.store(true, ordering: .releasing)
        queue.wake.signal()
        stopped.signal()
        _ = finished.wait(timeout: deadline)
        loop.shutdown()
    }

    private func run() {
        defer { finished.signal() }
        while !stopping.load(ordering: .acquiring) {
            // Woken by a full batch: full batches only (a wake left over from a batch already
            // sent must not send the open one early); after the delay, whatever waits.
            let woken = queue.wake.wait(timeout: .now() + Self.scheduleDelay) == .success
            drain(fullOnly: woken)
        }
        drain()
        // What is still queued at the stop's deadline, or ended after the last drain, is lost.
        let left = queue.count
        if left > 0 { counts.withLock { $0.droppedExportFailed += left } }
    }

    /// Sends batches while a whole one is queued (everything once a stop is asked, until its
    /// deadline); what is left waits for the next wake.
    private func drain(fullOnly: Bool = false) {
        while !isPastStopDeadline {
            guard let batch = queue.take(fullOnly: fullOnly && !stopping.load(ordering: .acquiring)) else { return }
            export(batch)
            queue.recycle(batch)
            if !stopping.load(ordering: .acquiring) && queue.count < Self.maxBatchSpans { return }
        }
    }

    private var isPastStopDeadline: Bool {
        stopping.load(ordering: .acquiring) && DispatchTime.now() >= stopDeadline.withLock { $0 }
    }

    /// Sends one batch until ``ExportRetry`` says it is done or dropped.
    private func export(_ batch: Batch) {
        let body = encoding.exportRequest(spanFields: batch.fields.bytes)
        var retry = ExportRetry()
        while true {
            guard !isPastStopDeadline else { return drop(batch.count) }
            let (outcome, rejected) = send(body)
            switch retry.decide(outcome, jitter: Double.random(in: 0...1)) {
            case .exported:
                // A partial success: the collector kept all but `rejected` (not sent again: OTLP
                // says a partial success is not retried).
                let refused = min(max(rejected, 0), batch.count)
                counts.withLock {
                    $0.exported += batch.count - refused
                    $0.droppedRejected += refused
                }
                if refused > 0 && !rejectionLogged.exchange(true, ordering: .relaxed) {
                    logger.warning(
                        "the trace collector rejected spans it was sent; counted, not sent again (logged once)",
                        metadata: ["endpoint": .string(endpointForLogs), "rejected": .stringConvertible(refused)])
                }
                if failing.exchange(false, ordering: .relaxed) {
                    logger.notice("trace export resumed", metadata: ["endpoint": .string(endpointForLogs)])
                }
                return
            case .retry(let pause):
                counts.withLock { $0.failedExports += 1 }
                noteFailure(outcome, dropping: false)
                // A pause that would end past a stop's deadline drops the batch (now, or when
                // a stop is asked during it).
                let resume = DispatchTime.now() + pause
                sleep(until: resume, unlessStopBefore: resume)
                if stopping.load(ordering: .acquiring) && resume > stopDeadline.withLock({ $0 }) {
                    return drop(batch.count)
                }
            case .drop:
                counts.withLock { $0.failedExports += 1 }
                noteFailure(outcome, dropping: true)
                drop(batch.count)
                return
            }
        }
    }

    private func drop(_ count: Int) { counts.withLock { $0.droppedExportFailed += count } }

    /// Waits until `time`, or until a stop whose deadline comes before `resume` is asked.
    private func sleep(until time: DispatchTime, unlessStopBefore resume: DispatchTime) {
        if !stopping.load(ordering: .acquiring) { _ = stopped.wait(timeout: time) }
        while DispatchTime.now() < time {
            if stopping.load(ordering: .acquiring) && resume > stopDeadline.withLock({ $0 }) { return }
            let left = Double(time.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1e9
            Thread.sleep(forTimeInterval: min(max(left, 0.001), 0.1))
        }
    }

    /// One POST to the collector, waited for on this thread.
    /// The answer's `partial_success.rejected_spans` when the collector took the batch (else 0).
    private func send(_ body: [UInt8]) -> (outcome: ExportRetry.Outcome, rejected: Int) {
        var request = UpstreamRequest(
            scheme: target.scheme, host: target.host, port: target.port, target: target.path, method: .POST,
            headers: [("Content-Type", "application/x-protobuf"), ("User-Agent", "cloak")] + headers, body: body,
            timeoutSeconds: Self.exportTimeout, connectTimeoutSeconds: 5, caFile: settings.caFile)
        request.clientCertificate = settings.clientCertificate
        request.trustStamp = settings.trustStamp
        let answered = DispatchSemaphore(value: 0)
        let result = Mutex<Result<HTTPResponse, UpstreamError>?>(nil)
        loop.handle.send(request) { outcome in
            result.withLock { $0 = outcome }
            answered.signal()
        }
        guard answered.wait(timeout: .now() + Self.exportTimeout + 1) == .success else { return (.failed, 0) }
        switch result.withLock({ $0 }) {
        case .success(let response):
            let hint = response.headers.first { $0.name.caseInsensitiveEquals("retry-after") }?.value
            let rejected = (200..<300).contains(response.status) ? OTLPTraceEncoding.rejectedSpans(response.body) : 0
            return (.answered(status: response.status, retryAfter: ExportRetry.retryAfter(hint)), rejected)
        case .failure(.badResponse), .failure(.invalidRequest):
            // Not HTTP Cloak accepts, or a request it cannot send: the same again would fare no
            // better, and a collector that took the batch would get it twice.
            return (.unusable, 0)
        case .failure(.unreachable), .failure(.timeout), nil:
            return (.failed, 0)
        }
    }

    /// Logs the first failure after a success (and each dropped batch at most once a state).
    private func noteFailure(_ outcome: ExportRetry.Outcome, dropping: Bool) {
        guard !failing.exchange(true, ordering: .relaxed) else { return }
        let why: String
        switch outcome {
        case .answered(let status, _): why = "the collector answered \(status)"
        case .failed: why = "the collector could not be reached or did not answer"
        case .unusable: why = "the collector's answer was not usable HTTP"
        }
        logger.warning(
            "trace export failing; spans are dropped and counted while it fails",
            metadata: [
                "endpoint": .string(endpointForLogs), "reason": .string(why),
                "batch": .string(dropping ? "dropped" : "retried"),
            ])
    }

    /// `name=value` pairs separated by commas (values percent-decoded), as the OpenTelemetry
    /// exporter variables say; nil when one is not a header Cloak can send (a name of token
    /// characters, a value without control characters) or names one Cloak sets itself.
    static func headers(_ text: String, asHeaders: Bool = true) -> [(name: String, value: String)]? {
        var headers: [(name: String, value: String)] = []
        for pair in text.split(separator: ",") where !pair.allSatisfy({ $0 == " " }) {
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
            guard
                let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                    .removingPercentEncoding,
                !name.isEmpty, name.utf8.count <= 255, value.utf8.count <= 4096,
                value.unicodeScalars.allSatisfy({ ($0.value >= 0x20 && $0.value < 0x7f) || $0.value == 0x09 }),
                !asHeaders
                    || (HTTPSyntax.isToken(name) && !Self.headersCloakSets.contains(name.lowercased())
                        && !name.lowercased().hasPrefix("proxy-"))
            else { return nil }
            headers.append((name, value))
        }
        return headers
    }

    /// Headers of the message or the connection, which Cloak writes itself.
    static let headersCloakSets: Set<String> = [
        "host", "content-length", "content-type", "content-encoding", "transfer-encoding", "connection", "keep-alive",
        "te", "trailer", "upgrade", "expect",
    ]

    /// The collector's scheme, host and port (never a path or query, which may carry a key).
    private var endpointForLogs: String { "\(target.scheme.rawValue)://\(target.host):\(target.port)" }
}

/// Why the trace export could not start.
package enum TraceExportError: Error, CustomStringConvertible {
    case endpoint
    case loop(String)
    /// The variable's value is not a list of headers (its value is never shown: it holds a key).
    case headers(String)
    /// `OTEL_RESOURCE_ATTRIBUTES` is not a list of `key=value`.
    case resourceAttributes

    package var description: String {
        switch self {
        case .endpoint: return "telemetry.traces.endpoint is not an http:// or https:// URL"
        case .loop(let why): return "cannot start the export's event loop: \(why)"
        case .headers(let variable): return "\(variable) is not a list of name=value headers"
        case .resourceAttributes: return "OTEL_RESOURCE_ATTRIBUTES is not a list of key=value"
        }
    }
}
