import CloakVault
import Instrumentation
import Tracing

/// A vault call's span (`vault create`, `vault reveal`, …) as the vault's executor sees it
/// (``VaultJobTrace``): the executor batch that serves the call, one store round trip, gets a
/// span of its own, `vault batch`.
///
/// - A batch that serves one traced call (the ordinary path: one request per round trip) is a
///   child of that call's span, so the request's trace reads as one tree.
/// - A batch that serves several (group commit: one transaction, one commit for every request
///   queued) cannot be the child of each: it starts a trace of its own, with an OpenTelemetry
///   link to every call span it serves, and each of those traces finds it by its link.
///
/// Made by ``VaultClient`` only for a span the exporter will send (a caller's unsampled trace
/// links nothing and starts no batch span). Both spans hold counts only.
struct VaultCallTrace: VaultJobTrace {
    let tracer: CloakTracer
    let span: RecordedSpan

    func startBatch(serving jobs: [any VaultJobTrace]) -> any VaultBatchTrace {
        let calls = jobs.compactMap { $0 as? VaultCallTrace }
        guard calls.count > 1 else {
            return VaultBatchSpan(span: tracer.startSpan("vault batch", context: span.context, ofKind: .client))
        }
        let batch = tracer.startSpan("vault batch", context: InstrumentationContext.topLevel, ofKind: .client)
        for call in calls {
            batch.addLink(SpanLink(context: call.span.context, attributes: [:]))
        }
        return VaultBatchSpan(span: batch)
    }
}

/// The span of one executor batch: its jobs, the statements it sent and the rows they read or
/// changed (its duration is the span's); an error when the store failed.
struct VaultBatchSpan: VaultBatchTrace {
    let span: RecordedSpan

    func end(_ summary: VaultBatchSummary) {
        span.set("cloak.vault.batch.jobs", summary.jobs)
        span.set("cloak.vault.batch.statements", summary.statements)
        span.set("cloak.vault.batch.rows", summary.rows)
        span.set("cloak.vault.batch.failed_jobs", summary.failedJobs)
        span.set("cloak.vault.batch.reads_only", summary.readsOnly)
        if summary.storeFailed { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }
}
