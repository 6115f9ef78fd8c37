/// How the server reads a request's body, decided from the request's method and path before any
/// of the body is read (the endpoint declares it).
public enum RequestBodyDelivery: Sendable, Equatable {
    /// Read whole first, at most ``HTTPServerConfiguration/maxBodyBytes`` (every endpoint that
    /// does not say otherwise).
    case whole
    /// Handed to the handler as it arrives (``HTTPRequest/bodyStream``), at most `maxBytes` in
    /// all: a length over it is answered 413 on the head, a chunked body that grows past it fails
    /// its stream and is answered 413.
    case streamed(maxBytes: Int)
}
