/// What a service's router says of a request on its head, before any of its body is read: how
/// its body is read, and what the router found. The server asks once per head with a body
/// (``HTTPServer``'s `route`) and hands `found` to the handler (``HTTPRequest/route``), so the
/// request is never routed twice.
public struct HeadRoute: Sendable {
    public var body: RequestBodyDelivery
    /// The router's match, opaque to the server.
    public var found: (any Sendable)?

    public init(body: RequestBodyDelivery = .whole, found: (any Sendable)? = nil) {
        self.body = body
        self.found = found
    }
}
