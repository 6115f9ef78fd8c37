import CloakCore
import CloakHTTP
import CloakVault

/// Writes the audit lines of what the handler did (its ``Outcome``), once the answer is made:
/// handlers note, this step writes (the door stored them before). A request refused before its
/// handler has no outcome and writes nothing here (its refusal is in the access log), except a
/// refused credential (401), counted a minute (``RefusalTally``).
struct AuditMiddleware: Middleware {
    let log: AuditLog
    /// Where 401s are counted (one event a client address, endpoint and minute).
    var refusals: RefusalTally? = nil

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        if let refusals, context.error?.code == .invalidAccessToken {
            let endpoint: String
            if case let .found(found, _, _) = context.route { endpoint = found.name } else { endpoint = "-" }
            refusals.count(address: context.request.remoteAddress, endpoint: endpoint)
        }
        guard let outcome = context.outcome, outcome.logged else { return }
        let ids = context.trace?.ids
        for (var event, stored) in outcome.recorded {
            if let ids {
                event.facts += [AuditEvent.Fact("trace_id", ids.traceID), AuditEvent.Fact("span_id", ids.spanID)]
            }
            log.record(event, stored: stored)
        }
    }
}
