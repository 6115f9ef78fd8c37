import CloakCore

/// The request log: one JSON line per request.
///
/// Separate from the diagnostic ``JSONLogHandler`` (swift-log) for the same reason web servers
/// keep an access log apart from the error log: it is written for every request, so it is built
/// without a metadata dictionary, and its fields are fixed: `ts, level, msg, method, path, route,
/// status, duration_us, request_id`, and `steps` after a route ran some. The path is scrubbed of digit runs, and a path that names
/// an alias (`/aliases/{alias}`, `/files/{alias}`) is logged as its route: an alias that was
/// revealed stays out of the log as its value does. No body, header value
/// or field value is ever among its fields. The fixed parts are written as they are; the values
/// go through ``JSONWriter``'s string escaping.
struct AccessLog: Sendable {
    let sink: LogSink

    func record(
        method: String, path: String, route: String, status: Int, micros: Int, requestID: String, client: String = "",
        trace: TraceContext? = nil, route facts: Reply.RouteFacts = Reply.RouteFacts()
    ) {
        var w = JSONWriter(reservingCapacity: 256)
        w.rawJSON(#"{"ts":""#)
        let now = UTCTimestamp.now()
        w.rawJSON(count: UTCTimestamp.length) {
            UTCTimestamp.write(seconds: now.seconds, milliseconds: now.milliseconds, to: $0)
        }
        w.rawJSON(#"","level":"info","msg":"request","method":"#)
        w.writeString(method)
        w.rawJSON(#","path":"#)
        w.writeString(route.hasSuffix("{alias}") ? route : Redaction.scrub(path))
        w.rawJSON(#","route":"#)
        w.writeString(route)
        w.rawJSON(#","status":"#)
        w.writeInt(status)
        w.rawJSON(#","duration_us":"#)
        w.writeInt(max(micros, 0))
        w.rawJSON(#","request_id":"#)
        w.writeString(requestID)
        w.rawJSON(#","client":"#)
        w.writeString(client)
        if !facts.steps.isEmpty {
            // The names of the route's steps that ran (issue 49): never a key or a value.
            w.rawJSON(#","steps":"#)
            w.writeString(facts.steps)
        }
        if !facts.matched.isEmpty || !facts.missed.isEmpty {
            // The request selectors as configured (issue 57): a typo shows as one that took nothing.
            w.rawJSON(#","selectors_matched":"#)
            w.writeString(facts.matched.joined(separator: ","))
            w.rawJSON(#","selectors_missed":"#)
            w.writeString(facts.missed.joined(separator: ","))
        }
        if let trace {
            // The ids' hex straight into the line (no strings made for them).
            w.rawJSON(#","trace_id":""#)
            w.rawJSON(count: 32) { out in
                let buffer = UnsafeMutableBufferPointer(start: out, count: 32)
                Hex.write(trace.traceID.high, into: buffer, at: 0)
                Hex.write(trace.traceID.low, into: buffer, at: 16)
            }
            w.rawJSON(#"","span_id":""#)
            w.rawJSON(count: 16) {
                Hex.write(trace.spanID.value, into: UnsafeMutableBufferPointer(start: $0, count: 16), at: 0)
            }
            w.rawJSON(#"""#)
        }
        w.rawJSON("}")
        w.withBytes { sink($0) }
    }
}
