import CloakCore

/// One JSON log line of a fixed shape, written field by field into one buffer: no metadata
/// dictionary, no sorting, no boxing of numbers.
///
/// For lines written per call that would otherwise go through swift-log (the egress line: 20k
/// instructions a request with its metadata dictionary, about 2k this way). The output is the
/// same as ``JSONLogHandler``'s for the same fields when the caller adds them in the order that
/// handler writes them, sorted by key: `ts`, `level` and `msg` first, then the fields. The
/// access log, on every request of every door, keeps its own writer (``AccessLog``), its fixed
/// parts fused into fewer pieces.
struct LogLine {
    private var writer: JSONWriter

    /// A line with its timestamp (now), level and message written.
    init(_ message: StaticString, level: StaticString = "info") {
        writer = JSONWriter(reservingCapacity: 256)
        writer.rawJSON(#"{"ts":""#)
        let now = UTCTimestamp.now()
        writer.rawJSON(count: UTCTimestamp.length) {
            UTCTimestamp.write(seconds: now.seconds, milliseconds: now.milliseconds, to: $0)
        }
        writer.rawJSON(#"","level":""#)
        writer.rawJSON(level)
        writer.rawJSON(#"","msg":""#)
        writer.rawJSON(message)
        writer.rawJSON(#"""#)
    }

    /// A text member, escaped as JSON; `name` needs no escaping.
    mutating func field(_ name: StaticString, _ value: String) {
        writer.rawMemberName(name)
        writer.writeString(value)
    }

    /// A text member whose name is known only at run time (an audit line's facts): both escaped.
    mutating func field(named name: String, _ value: String) {
        writer.rawJSON(",")
        writer.writeString(name)
        writer.rawJSON(":")
        writer.writeString(value)
    }

    /// A number member.
    mutating func field(_ name: StaticString, _ value: Int) {
        writer.rawMemberName(name)
        writer.writeInt(value)
    }

    /// Closes the object and hands the line to `sink`.
    mutating func write(to sink: LogSink) {
        writer.rawJSON("}")
        writer.withBytes { sink($0) }
    }
}
