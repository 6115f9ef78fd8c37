import CloakHTTP
import Dispatch

/// Counts every answer by route template and status, with its duration
/// (`cloak_requests_total`, `cloak_request_duration_seconds`).
struct MetricsMiddleware: Middleware {
    let metrics: ServiceMetrics
    /// The label of every request of the door (`egress-proxy`), else each one's template.
    var route: String?

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        let nanoseconds = DispatchTime.now().uptimeNanoseconds - context.start
        metrics.record(
            route: route ?? context.template, status: response.status, nanoseconds: Int64(nanoseconds),
            loop: context.request.loop)
    }
}
