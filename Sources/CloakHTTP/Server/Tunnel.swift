/// Where a request on a forward-proxy door is going: from the CONNECT tunnel it arrived through
/// (always `https`), or from its absolute-form target (`POST http://host/path`).
public struct ProxyTarget: Sendable, Equatable {
    public var scheme: String
    public var host: String
    public var port: Int
    /// Set for requests inside a tunnel: what the CONNECT's authorizer granted (a token id).
    public var tunnelGrant: String?

    public init(scheme: String, host: String, port: Int, tunnelGrant: String? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.tunnelGrant = tunnelGrant
    }
}

/// The answer to a `CONNECT host:port` on a forward-proxy door.
public enum TunnelDecision: Sendable {
    /// Open the tunnel: answer 200, then terminate the client's TLS with `certificate` (a leaf
    /// for the host) and serve the requests inside like any other, each carrying `grant`.
    case open(grant: String, certificate: TLSServerContext)
    /// Answer this and open nothing.
    case refuse(HTTPResponse)
}

/// The forward-proxy door's judge of CONNECTs, on the loop thread (it must not block).
public struct TunnelAuthorizer: Sendable {
    /// Decides a CONNECT: the request (its `Proxy-Authorization`), the host and the port asked for.
    public var decide: @Sendable (_ connect: HTTPRequest, _ host: String, _ port: Int) -> TunnelDecision
    /// The answer to a CONNECT the server refuses before asking (no `host:port`, bytes sent
    /// before the answer, a CONNECT inside a tunnel): status 400 and the reason, in the body
    /// the service writes for a malformed request.
    public var malformed: @Sendable (_ reason: String) -> HTTPResponse

    public init(
        decide: @escaping @Sendable (_ connect: HTTPRequest, _ host: String, _ port: Int) -> TunnelDecision,
        malformed: @escaping @Sendable (_ reason: String) -> HTTPResponse
    ) {
        self.decide = decide
        self.malformed = malformed
    }
}
