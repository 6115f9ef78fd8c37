import CloakCore

/// The request log: one JSON line per request.
///
/// Separate from the diagnostic ``JSONLogHandler`` (swift-log) for the same reason web servers
/// keep an access log apart from the error log: it is written for every request, so it is built
/// without a metadata dictionary (``LogLine``), and its fields are fixed: `ts, level, msg, method,
/// path, route, status, duration_us, request_id, client`. The path is scrubbed of digit runs; no
/// body, header value or field value is ever among its fields.
struct AccessLog: Sendable {
    let sink: LogSink

    func record(
        method: String, path: String, route: String, status: Int, micros: Int, requestID: String, client: String = ""
    ) {
        var line = LogLine("request")
        line.field("method", method)
        line.field("path", Redaction.scrub(path))
        line.field("route", route)
        line.field("status", status)
        line.field("duration_us", max(micros, 0))
        line.field("request_id", requestID)
        line.field("client", client)
        line.write(to: sink)
    }
}
