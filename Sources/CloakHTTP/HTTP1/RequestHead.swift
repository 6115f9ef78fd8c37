import CloakCore

/// A request's head as ``RequestParser`` read it: the request line and the field lines, in order,
/// names as sent (compare them case-insensitively), values without the whitespace around them.
public struct RequestHead: Sendable, Equatable {
    public var method: String
    /// The request target as sent (origin form `/a?b`, absolute form, or `host:port` for CONNECT).
    public var target: String
    /// `HTTP/1.1` (true) or `HTTP/1.0` (false).
    public var isHTTP11: Bool
    public var headers: [(name: String, value: String)]
    /// How the body is framed: nothing, a length, or chunks.
    public var body: BodyFraming
    /// The target read in its form (set by the parser, which refuses a target it cannot read).
    var requestTarget = RequestTarget(rawPath: "/", path: "/")

    public enum BodyFraming: Sendable, Equatable {
        case none
        case length(UInt64)
        case chunked

        /// The length announced, if any.
        public var length: Int? {
            if case .length(let length) = self { return Int(clamping: length) }
            return nil
        }
    }

    /// The first field of `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    public static func == (a: RequestHead, b: RequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.isHTTP11 == b.isHTTP11 && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}
