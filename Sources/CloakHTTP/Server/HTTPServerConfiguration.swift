/// Limits and shape of the HTTP server: each has an explicit value here.
public struct HTTPServerConfiguration: Sendable {
    /// IPv4 or IPv6 literal to bind, e.g. "127.0.0.1" or "::1".
    public var host: String
    /// 0 picks a free port (see ``HTTPServer/port``).
    public var port: Int
    /// Event-loop threads, each with its own event_base and SO_REUSEPORT listener; 0 = one per core.
    public var threads: Int
    /// Bodies over this get 413 with a 1003 body.
    public var maxBodyBytes: Int
    /// Request line plus headers (or a chunked body's trailer section) over this get 431.
    public var maxHeaderBytes: Int
    /// How long an answer may take to be written out, in seconds (a client that does not read
    /// it loses the connection).
    public var idleTimeoutSeconds: Int
    /// The request head must be complete this many seconds after the connection was accepted or
    /// its previous answer sent; past it the connection is closed (slowloris).
    public var headerTimeoutSeconds: Int = 10
    /// The body must be complete this many seconds after the head.
    public var bodyTimeoutSeconds: Int = 30
    /// `server.trusted_proxies`: peers whose `Forwarded` / `X-Forwarded-For` and PROXY header
    /// name the client (``ForwardedClient``); everyone else's are ignored.
    public var trustedProxies = TrustedProxies()
    /// `server.forwarded_header`: which header trusted proxies name the client in.
    public var forwardedHeader = ForwardedClient.Header.xForwardedFor
    /// `server.proxy_protocol`: every connection starts with a PROXY protocol header (v1 or v2)
    /// from a trusted proxy, or is closed.
    public var proxyProtocol = false
    /// Open connections (counted from accept, plain or TLS); past this a connection is answered
    /// 503 and closed at once. Lowered at start to stay under the descriptor limit.
    public var maxConnections: Int
    /// Open connections one client address may hold (0: no limit). Behind a balancer every
    /// connection comes from the balancer's addresses: leave it at 0 there.
    public var maxConnectionsPerAddress: Int = 0
    /// The answer to a connection over ``maxConnections`` (plain HTTP; a TLS one is closed).
    public var refusalBody: [UInt8] = Array(#"{"error":"too many connections"}"#.utf8)
    /// The body of the 408 to a request whose head or body did not arrive in time.
    public var timeoutRefusalBody: [UInt8] = Array(#"{"error":"the request did not arrive in time"}"#.utf8)
    /// How long a shutdown waits for in-flight requests before closing everything.
    public var drainTimeoutSeconds: Double
    /// PEM files for TLS termination; nil: plain HTTP.
    public var tls: (certificateChain: String, privateKey: String)?

    public init(
        host: String = "127.0.0.1", port: Int = 8080, threads: Int = 0, maxBodyBytes: Int = 1_048_576,
        maxHeaderBytes: Int = 16_384, idleTimeoutSeconds: Int = 30, maxConnections: Int = 4096,
        drainTimeoutSeconds: Double = 10
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxConnections = maxConnections
        self.drainTimeoutSeconds = drainTimeoutSeconds
    }
}
