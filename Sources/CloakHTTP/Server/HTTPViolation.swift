/// A request the server refuses before any route sees it. The handler is still called, with the
/// violation set and an empty body, so that the refusal is answered in the service's error format
/// and logged like any other request; the answer carries ``status`` and closes the connection
/// (except ``bodyTooLarge`` announced by a length, whose body is never read either way).
public enum HTTPViolation: Sendable, Equatable {
    /// The body exceeds ``HTTPServerConfiguration/maxBodyBytes``: answer 413.
    case bodyTooLarge(limit: Int)
    /// Two `Content-Length` headers disagree (a request-smuggling vector): answer 400.
    case conflictingContentLength
    /// A header name is not an RFC 9110 token (`Transfer-Encoding :`, a space or control byte):
    /// answer 400 and close.
    case invalidHeaderName
    /// The bytes break strict HTTP/1.1 (``RequestParser``: `Content-Length: +4`, a chunk size
    /// `0x4`, a bare LF, a second `Transfer-Encoding`, no `Host` in HTTP/1.1, a target of no
    /// form...): answer 400 and close. `reason` names the rule, never a byte of the request.
    case malformedFraming(reason: String)
    /// The head (or a trailer section) is over ``HTTPServerConfiguration/maxHeaderBytes`` or
    /// has too many fields: answer 431 (RFC 6585 5).
    case headTooLarge
    /// The request line is too long: answer 414.
    case requestLineTooLong
    /// A version other than HTTP/1.0 and HTTP/1.1: answer 505.
    case unsupportedVersion
    /// A method the server does not know (method names are case-sensitive): answer 501.
    case methodNotImplemented

    /// The status the refusal is answered with.
    public var status: Int {
        switch self {
        case .bodyTooLarge: 413
        case .headTooLarge: 431
        case .requestLineTooLong: 414
        case .unsupportedVersion: 505
        case .methodNotImplemented: 501
        default: 400
        }
    }

    /// The violation a parser refusal is reported as.
    init(_ violation: RequestParser.BrokenRule) {
        switch violation {
        case .headTooLarge: self = .headTooLarge
        case .requestLineTooLong: self = .requestLineTooLong
        case .unsupportedVersion: self = .unsupportedVersion
        case .invalidFieldName: self = .invalidHeaderName
        case .framing(.conflictingContentLength): self = .conflictingContentLength
        default: self = .malformedFraming(reason: violation.description)
        }
    }
}
