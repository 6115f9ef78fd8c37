import Foundation

/// Reads the spans out of OTLP/HTTP export requests as a collector would: HTTP framing, then
/// the protobuf `ExportTraceServiceRequest` (resource_spans 1 → scope_spans 2 → spans 2; a span's
/// trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start and end times 7 and 8
/// (fixed64), attributes 9 of key 1 and value 2 (string 1, bool 2, int 3), links 13 (trace_id 1,
/// span_id 2), status 15 (code 3)). Only what the tests look at; unknown fields are skipped by
/// wire type.
enum OTLPDecoding {
    struct Span: CustomStringConvertible {
        var traceID = ""
        var spanID = ""
        var parentSpanID = ""
        var name = ""
        var kind = 0
        var attributes: [String: String] = [:]
        /// The spans this one links to (OpenTelemetry links), as trace and span ids.
        var links: [(traceID: String, spanID: String)] = []
        /// `Status.code`: 0 unset, 1 ok, 2 error.
        var statusCode = 0
        var startNanoseconds: UInt64 = 0
        var endNanoseconds: UInt64 = 0
        var description: String {
            "\(name) \(traceID)/\(spanID)←\(parentSpanID) \(attributes) links \(links.map { $0.spanID })"
        }
        /// Whether the span has no parent (the root of its trace).
        var isRoot: Bool { parentSpanID.isEmpty || parentSpanID == String(repeating: "0", count: 16) }
    }

    /// Every span of every export request in `stream` (the bytes a receiver got, requests back to back).
    static func spans(inHTTP stream: [UInt8]) -> [Span] {
        var spans: [Span] = []
        var rest = stream[...]
        let separator = Array("\r\n\r\n".utf8)
        while let end = rest.firstRange(of: separator) {
            let head = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyStart = end.upperBound
            guard rest.endIndex - bodyStart >= length else { break }
            let body = Array(rest[bodyStart..<(bodyStart + length)])
            if head.hasPrefix("POST /v1/traces") { spans += exportRequest(body) }
            rest = rest[(bodyStart + length)...]
        }
        return spans
    }

    static func exportRequest(_ bytes: [UInt8]) -> [Span] {
        var spans: [Span] = []
        for (field, value) in fields(bytes) where field == 1 {  // resource_spans
            for (field, scope) in fields(value) where field == 2 {  // scope_spans
                for (field, span) in fields(scope) where field == 2 { spans.append(decodeSpan(span)) }
            }
        }
        return spans
    }

    static func decodeSpan(_ bytes: [UInt8]) -> Span {
        var span = Span()
        for (field, value) in fields(bytes) {
            switch field {
            case 1: span.traceID = hex(value)
            case 2: span.spanID = hex(value)
            case 4: span.parentSpanID = hex(value)
            case 5: span.name = String(decoding: value, as: UTF8.self)
            case 6: span.kind = Int(varint(value))
            case 9:
                var key = ""
                var text = ""
                for (f, v) in fields(value) {
                    if f == 1 { key = String(decoding: v, as: UTF8.self) }
                    if f == 2 {
                        for (kind, inner) in fields(v) {
                            switch kind {
                            case 1: text = String(decoding: inner, as: UTF8.self)
                            case 2, 3: text = String(varint(inner))
                            default: text = "?"
                            }
                        }
                    }
                }
                span.attributes[key] = text
            case 7: span.startNanoseconds = fixed64(value)
            case 8: span.endNanoseconds = fixed64(value)
            case 13:
                var link = (traceID: "", spanID: "")
                for (f, v) in fields(value) {
                    if f == 1 { link.traceID = hex(v) }
                    if f == 2 { link.spanID = hex(v) }
                }
                span.links.append(link)
            case 15:
                for (f, v) in fields(value) where f == 3 { span.statusCode = Int(varint(v)) }
            default: break
            }
        }
        return span
    }

    /// Each field's number and value: a length-delimited field's bytes, a varint's bytes re-read
    /// by ``varint(_:)``, fixed-width ones as their bytes.
    static func fields(_ bytes: [UInt8]) -> [(Int, [UInt8])] {
        var out: [(Int, [UInt8])] = []
        var i = 0
        func readVarint() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
                if shift > 63 { return nil }
            }
            return nil
        }
        while i < bytes.count {
            guard let key = readVarint() else { break }
            let field = Int(key >> 3)
            switch key & 7 {
            case 0:
                let start = i
                guard readVarint() != nil else { return out }
                out.append((field, Array(bytes[start..<i])))
            case 1:
                guard i + 8 <= bytes.count else { return out }
                out.append((field, Array(bytes[i..<(i + 8)])))
                i += 8
            case 2:
                guard let length = readVarint(), i + Int(length) <= bytes.count else { return out }
                out.append((field, Array(bytes[i..<(i + Int(length))])))
                i += Int(length)
            case 5:
                guard i + 4 <= bytes.count else { return out }
                out.append((field, Array(bytes[i..<(i + 4)])))
                i += 4
            default:
                return out
            }
        }
        return out
    }

    static func varint(_ bytes: [UInt8]) -> UInt64 {
        var result: UInt64 = 0
        for (n, b) in bytes.enumerated() { result |= UInt64(b & 0x7F) << (7 * UInt64(n)) }
        return result
    }

    /// A fixed64 field's bytes (little-endian) as a number.
    static func fixed64(_ bytes: [UInt8]) -> UInt64 {
        bytes.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
