import CloakHTTP

/// Writes the audit lines of what the handler did (its ``Outcome``), once the answer is made:
/// handlers note, this step writes. A request refused before its handler has no outcome and
/// writes nothing here (its refusal is in the access log).
struct AuditMiddleware: Middleware {
    let log: AuditLog

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        guard let outcome = context.outcome else { return }
        let ids = context.trace?.ids
        for var entry in outcome.recorded {
            if let ids { entry.facts += [("trace_id", ids.traceID), ("span_id", ids.spanID)] }
            log.record(entry)
        }
    }
}
