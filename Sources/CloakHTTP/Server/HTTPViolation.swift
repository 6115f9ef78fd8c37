/// A request the server refuses before any route sees it. The handler is still called, with the
/// violation set and an empty body, so that the refusal is answered in the service's error format
/// and logged like any other request.
public enum HTTPViolation: Sendable, Equatable {
    /// The body exceeds ``HTTPServerConfiguration/maxBodyBytes``: answer 413.
    case bodyTooLarge(limit: Int)
    /// Two `Content-Length` headers disagree (a request-smuggling vector): answer 400.
    case conflictingContentLength
    /// A header name is not an RFC 9110 token (`Transfer-Encoding :`, a space or control byte):
    /// answer 400 and close.
    case invalidHeaderName
    /// The bytes break strict HTTP/1.1 framing (``RequestFraming``: `Content-Length: +4`, a
    /// chunk size `0x4`, a bare LF, a second `Transfer-Encoding`...): answer 400 and close.
    /// `reason` names the rule, never a byte of the request.
    case malformedFraming(reason: String)
}
