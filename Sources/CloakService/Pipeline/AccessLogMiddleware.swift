import CloakHTTP
import Dispatch

/// Writes the access-log line of every answer (``AccessLog``).
struct AccessLogMiddleware: Middleware {
    let log: AccessLog
    /// The route of every request of the door, with the path left out (`egress-proxy`: the path
    /// of a forwarded request may hold anything its client put there). Nil: the template, and
    /// the path scrubbed of digit runs.
    var door: String?

    func response(_ response: inout HTTPResponse, _ context: RequestContext) {
        let micros = (DispatchTime.now().uptimeNanoseconds - context.start) / 1000
        log.record(
            method: context.request.method.rawValue, path: door == nil ? context.request.path : "-",
            route: door ?? context.template, status: response.status, micros: Int(micros),
            requestID: context.request.requestID, client: context.request.remoteAddress,
            trace: context.trace?.loggedContext, route: context.routeFacts)
    }
}
