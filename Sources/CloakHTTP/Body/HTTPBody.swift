/// A message's body, one type for requests, answers and upstream requests (issue 58): bytes
/// held whole, or a ``BodyStream`` read as it comes, with the length it promises (nil: known only
/// at its end, a chunked request's).
///
/// Its description and mirror never show a byte (a body may hold card data): `12 bytes`,
/// `a stream of 4096 bytes`.
public enum HTTPBody: Sendable {
    case bytes([UInt8])
    case stream(BodyStream, length: Int?)

    public static let empty = HTTPBody.bytes([])

    /// A whole body's bytes; empty for a stream.
    public var bytes: [UInt8] {
        if case .bytes(let bytes) = self { return bytes }
        return []
    }

    /// The stream, for a body read as it comes.
    public var stream: BodyStream? {
        if case .stream(let stream, _) = self { return stream }
        return nil
    }

    /// For a stream, the length it promises; nil for bytes. Answers and upstream requests are
    /// written with it; one that promised none is never written (an answer's connection closes,
    /// an upstream request is refused before it is sent: a head cannot frame it).
    var streamedLength: Int? {
        if case .stream(_, let length) = self { return length ?? 0 }
        return nil
    }

    /// The length known before the body is read: a whole body's count, a stream's promise.
    public var length: Int? {
        switch self {
        case .bytes(let bytes): bytes.count
        case .stream(_, let length): length
        }
    }
}

extension HTTPBody: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        switch self {
        case .bytes(let bytes): "\(bytes.count) bytes"
        case .stream(_, let length?): "a stream of \(length) bytes"
        case .stream(_, nil): "a stream"
        }
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["length": length as Any], displayStyle: .enum) }
}
