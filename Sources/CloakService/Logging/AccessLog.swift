import CloakCore

/// The request log: one JSON line per request, written straight into a buffer.
///
/// Separate from the diagnostic ``JSONLogHandler`` (swift-log) for the same reason web servers
/// keep an access log apart from the error log: it is written for every request, so it is built
/// without a metadata dictionary, and its fields are fixed: `ts, level, msg, method, path, route,
/// status, duration_us, request_id`. The path is scrubbed of digit runs; no body, header value
/// or field value is ever among its fields.
struct AccessLog: Sendable {
    let sink: LogSink

    func record(method: String, path: String, route: String, status: Int, micros: Int, requestID: String) {
        var w = JSONWriter(reservingCapacity: 256)
        w.beginObject()
        w.member("ts") { bytes in
            bytes.append(UInt8(ascii: "\""))
            JSONLogHandler.appendTimestamp(to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
        w.member("level", "info")
        w.member("msg", "request")
        w.member("method", method)
        w.member("path", Redaction.scrub(path))
        w.member("route", route)
        w.member("status", status)
        w.member("duration_us", micros)
        w.member("request_id", requestID)
        w.endObject()
        sink(String(decoding: w.bytes, as: UTF8.self))
    }
}
