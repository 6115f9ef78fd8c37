import CloakCore

/// The request log: one JSON line per request.
///
/// Separate from the diagnostic ``JSONLogHandler`` (swift-log) for the same reason web servers
/// keep an access log apart from the error log: it is written for every request, so it is built
/// without a metadata dictionary, and its fields are fixed: `ts, level, msg, method, path, route,
/// status, duration_us, request_id`. The path is scrubbed of digit runs; no body, header value
/// or field value is ever among its fields.
///
/// The line is written into a stack buffer by ``LogLineWriter`` and becomes a string once; a line
/// that does not fit (a long path full of escapes) is built with ``JSONWriter`` instead.
struct AccessLog: Sendable {
    let sink: LogSink

    /// Bytes of the stack buffer a line is written in.
    static let bufferBytes = 1024

    func record(method: String, path: String, route: String, status: Int, micros: Int, requestID: String) {
        let scrubbed = Redaction.isClean(path) ? path : Redaction.scrub(path)
        let line = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.bufferBytes) { buffer -> String? in
            var w = LogLineWriter(buffer)
            w.raw(#"{"ts":""#)
            w.timestamp()
            w.raw(#"","level":"info","msg":"request","method":""#)
            w.escaped(method)
            w.raw(#"","path":""#)
            w.escaped(scrubbed)
            w.raw(#"","route":""#)
            w.escaped(route)
            w.raw(#"","status":"#)
            w.decimal(status)
            w.raw(#","duration_us":"#)
            w.decimal(micros)
            w.raw(#","request_id":""#)
            w.escaped(requestID)
            w.raw(#""}"#)
            return w.overflowed ? nil : String(decoding: w.written, as: UTF8.self)
        }
        sink(line ?? Self.built(method: method, path: scrubbed, route: route, status: status, micros: micros, requestID: requestID))
    }

    /// The same line through ``JSONWriter`` (any length).
    static func built(method: String, path: String, route: String, status: Int, micros: Int, requestID: String) -> String {
        var w = JSONWriter(reservingCapacity: 512)
        w.beginObject()
        w.member("ts", JSONLogHandler.timestamp())
        w.member("level", "info")
        w.member("msg", "request")
        w.member("method", method)
        w.member("path", path)
        w.member("route", route)
        w.member("status", status)
        w.member("duration_us", micros)
        w.member("request_id", requestID)
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
