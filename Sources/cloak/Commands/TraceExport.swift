import CloakService
import Dispatch
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// The OTLP/HTTP (protobuf) export of `telemetry.traces`: swift-otel's tracer, batch processor
/// and exporter, run on a task of their own beside the event loops. Made only when the
/// configuration asks for traces; otherwise nothing of it exists.
final class TraceExport: Sendable {
    let tracer: any Tracer
    private let group: ServiceGroup
    private let finished = DispatchSemaphore(value: 0)

    init(_ settings: ServiceConfiguration.TraceSettings, logger: Logger) throws {
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        // A caller's sampled flag (trusted callers only) decides for the trace it continues; new
        // traces are sampled at the configured ratio before the tracer is asked
        // (TracingMiddleware), so every root span it is given is kept.
        configuration.traces.sampler = .parentBasedAlwaysOn
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        var base = settings.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        configuration.traces.otlpExporter.endpoint = base + "/v1/traces"
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        tracer = backend.factory
        group = ServiceGroup(services: [backend.service], gracefulShutdownSignals: [], logger: logger)
        let group = self.group
        let finished = self.finished
        Task.detached {
            try? await group.run()
            finished.signal()
        }
    }

    /// Sends what is queued and stops (at most `seconds`).
    func stop(seconds: Int = 5) {
        let group = self.group
        Task.detached { await group.triggerGracefulShutdown() }
        _ = finished.wait(timeout: .now() + .seconds(seconds))
    }
}
