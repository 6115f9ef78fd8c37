import CloakCore

/// One JSON log line of a fixed shape, written field by field into one buffer: no metadata
/// dictionary, no sorting, no boxing of numbers.
///
/// For the lines written on every request (the access log, the egress line). The output is the
/// same as ``JSONLogHandler``'s for the same fields when the caller adds them in the order that
/// handler writes them, sorted by key: `ts`, `level` and `msg` first, then the fields.
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
        // `","level":"` level `","msg":"` message `"`, in one piece.
        let levelPart: StaticString = #"","level":""#, messagePart: StaticString = #"","msg":""#
        let count =
            levelPart.utf8CodeUnitCount + level.utf8CodeUnitCount + messagePart.utf8CodeUnitCount
            + message.utf8CodeUnitCount + 1
        writer.rawJSON(count: count) { at in
            var at = Self.copy(levelPart, to: at)
            at = Self.copy(level, to: at)
            at = Self.copy(messagePart, to: at)
            at = Self.copy(message, to: at)
            at.pointee = UInt8(ascii: "\"")
        }
    }

    /// Copies `text` to `at`; returns the position after it.
    @inline(__always)
    private static func copy(_ text: StaticString, to at: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        at.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return at + text.utf8CodeUnitCount
    }

    /// `,"key":` as it is, in one piece: `key` is a member name that needs no escaping.
    private mutating func key(_ key: StaticString) {
        writer.rawJSON(count: key.utf8CodeUnitCount + 4) { at in
            at[0] = UInt8(ascii: ",")
            at[1] = UInt8(ascii: "\"")
            let end = Self.copy(key, to: at + 2)
            end[0] = UInt8(ascii: "\"")
            end[1] = UInt8(ascii: ":")
        }
    }

    /// A text member, escaped as JSON.
    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        writer.writeString(value)
    }

    /// A number member.
    mutating func field(_ name: StaticString, _ value: Int) {
        key(name)
        writer.writeInt(value)
    }

    /// Closes the object and hands the line to `sink`.
    mutating func write(to sink: LogSink) {
        writer.rawJSON("}")
        writer.withBytes { sink($0) }
    }
}
