import CloakCore
import Foundation
import Logging

/// Where log lines go: one call per complete line, its UTF-8 bytes without the newline (valid
/// only during the call: a sink copies what it keeps).
package typealias LogSink = @Sendable (UnsafeBufferPointer<UInt8>) -> Void

/// A swift-log handler that writes one JSON object per line.
///
/// Only metadata the code chooses is written; Cloak never puts a body, a field value or an
/// `Authorization` value into metadata, so none can appear here.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String
    private let sink: LogSink

    package init(label: String, sink: @escaping LogSink) {
        self.label = label
        self.sink = sink
    }

    /// Queues each line for standard output (``LogQueue/standardOutput``): a loop thread never
    /// waits for the write, and lines never interleave.
    package static let standardOutput: LogSink = { line in LogQueue.standardOutput.push(line) }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        // One writer, members streamed in key order: a line costs about a tenth of building a
        // document of it first (an egress or reveal line per request: Benchmarks/README.md).
        var w = JSONWriter(reservingCapacity: 256)
        w.rawJSON(#"{"ts":""#)
        let now = UTCTimestamp.now()
        w.rawJSON(count: UTCTimestamp.length) {
            UTCTimestamp.write(seconds: now.seconds, milliseconds: now.milliseconds, to: $0)
        }
        w.rawJSON(#"","level":"#)
        w.writeString(event.level.rawValue)
        w.rawJSON(#","msg":"#)
        w.writeString(event.message.description)
        let extra = event.metadata ?? [:]
        let merged = metadata.isEmpty ? extra : metadata.merging(extra) { _, new in new }
        for key in merged.keys.sorted() {
            w.rawJSON(",")
            w.writeString(key)
            w.rawJSON(":")
            switch merged[key]! {
            case let .string(text): w.writeString(text)
            case let .stringConvertible(value):
                if let number = value as? Int { w.writeInt(number) } else { w.writeString(value.description) }
            case let other: w.write(Self.json(other))
            }
        }
        w.rawJSON("}")
        w.withBytes { sink($0) }
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case let .string(s): return .string(s)
        case let .stringConvertible(c):
            if let i = c as? Int { return .int(i) }
            return .string(c.description)
        case let .array(a): return .array(a.map(json))
        case let .dictionary(d): return .object(d.keys.sorted().map { ($0, json(d[$0]!)) })
        }
    }

    /// Now, as ISO 8601 UTC with milliseconds.
    static func timestamp() -> String {
        let now = UTCTimestamp.now()
        return UTCTimestamp.string(seconds: now.seconds, milliseconds: now.milliseconds)
    }
}
