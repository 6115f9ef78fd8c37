/// A request the server refuses before any route sees it. The handler is still called, with the
/// violation set and an empty body, so that the refusal is answered in the service's error format
/// and logged like any other request.
public enum HTTPViolation: Sendable, Equatable {
    /// The body exceeds ``HTTPServerConfiguration/maxBodyBytes``: answer 413.
    case bodyTooLarge(limit: Int)
    /// Two `Content-Length` headers disagree (a request-smuggling vector): answer 400.
    case conflictingContentLength
    /// The server already has ``HTTPServerConfiguration/maxConnections`` open: answer 503; the
    /// connection is closed after the answer.
    case tooManyConnections(limit: Int)
}
