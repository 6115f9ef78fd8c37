import CloakCore
import Foundation
public import Logging

/// Where log lines go: one call per complete line, its UTF-8 bytes without the newline (valid
/// only during the call: a sink copies what it keeps).
public typealias LogSink = @Sendable (UnsafeBufferPointer<UInt8>) -> Void

/// A swift-log handler that writes one JSON object per line.
///
/// Only metadata the code chooses is written; Cloak never puts a body, a field value or an
/// `Authorization` value into metadata, so none can appear here.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private let sink: LogSink

    public init(label: String, sink: @escaping LogSink) {
        self.label = label
        self.sink = sink
    }

    /// Queues each line for standard output (``LogQueue/standardOutput``): a loop thread never
    /// waits for the write, and lines never interleave.
    public static let standardOutput: LogSink = { line in LogQueue.standardOutput.push(line) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var writer = JSONWriter(reservingCapacity: 256)
        writer.write(.object([
            ("ts", .string(Self.timestamp())),
            ("level", .string(event.level.rawValue)),
            ("msg", .string(event.message.description)),
        ]))
        var bytes = writer.takeBytes()
        bytes.removeLast()  // reopen the object for the metadata members
        let merged = metadata.isEmpty ? (event.metadata ?? [:]) : metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() {
            var member = JSONWriter(reservingCapacity: 64)
            member.writeString(key)
            bytes.append(UInt8(ascii: ","))
            bytes.append(contentsOf: member.bytes)
            bytes.append(UInt8(ascii: ":"))
            var value = JSONWriter(reservingCapacity: 64)
            value.write(Self.json(merged[key]!))
            bytes.append(contentsOf: value.bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        bytes.withUnsafeBufferPointer { sink($0) }
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
