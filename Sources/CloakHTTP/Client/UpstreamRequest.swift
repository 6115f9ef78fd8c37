import CloakCore
import Foundation

/// A request for an upstream service.
public struct UpstreamRequest: Sendable {
    public enum Scheme: String, Sendable { case http, https }

    /// PEM files of the client certificate (chain) and key presented for mutual TLS.
    public struct ClientCertificate: Sendable, Hashable {
        public var certificateChain: String
        public var privateKey: String
        public init(certificateChain: String, privateKey: String) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }
    }

    public var scheme: Scheme
    /// A host name or a numeric address.
    public var host: String
    public var port: Int
    /// The request target: path and query, e.g. `/v1/post?x=1`.
    public var target: String
    public var method: HTTPMethod
    /// Sent as given; `Host` is set from ``host`` and `Content-Length` from the body.
    public var headers: [(name: String, value: String)]
    /// The body: whole, or a stream sent as it is produced, of the length it promises (its
    /// pieces given on the client's loop thread).
    public var content: HTTPBody
    /// A whole body's bytes (empty for a streamed one).
    public var body: [UInt8] {
        get { content.bytes }
        set { content = .bytes(newValue) }
    }
    /// How long the whole exchange may take, connection included.
    public var timeoutSeconds: Double
    /// How long opening a new connection may take (TCP connect).
    public var connectTimeoutSeconds: Double
    /// PEM file of trusted CAs for HTTPS; nil: the system store.
    public var caFile: String?
    /// Presented to an https upstream that asks for a client certificate.
    public var clientCertificate: ClientCertificate?
    /// Whether the host may resolve to a loopback, private or link-local address (``AddressPolicy``).
    public var allowPrivate = true
    /// Whether the connection may carry other requests after this one (a route's `reuse`): false
    /// sends `Connection: close` and closes the connection after the answer.
    public var reuseConnection = true
    /// Whom the request is made for (the door's caller: a token, or a client address): a
    /// pooled connection carries only the exchanges of the caller it was opened for, so bytes
    /// an upstream sends behind an answer can reach nobody else (``IdleConnections``).
    public var caller = ""
    /// Identifies the contents of ``caFile`` and ``clientCertificate``'s files as they were read
    /// with the configuration: a reload that changed them gets a new TLS context, not the cached one.
    public var trustStamp = 0

    public init(
        scheme: Scheme, host: String, port: Int, target: String, method: HTTPMethod,
        headers: [(name: String, value: String)] = [], body: [UInt8] = [], timeoutSeconds: Double = 30,
        connectTimeoutSeconds: Double = 5, caFile: String? = nil
    ) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.target = target
        self.method = method
        self.headers = headers
        self.content = .bytes(body)
        self.timeoutSeconds = timeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.caFile = caFile
    }

    /// Parses `http(s)://host[:port][/path]`; nil for anything else.
    public static func parse(url: String) -> (scheme: Scheme, host: String, port: Int, path: String)? {
        let scheme: Scheme
        var rest: Substring
        if url.hasPrefix("https://") {
            scheme = .https; rest = url.dropFirst(8)
        } else if url.hasPrefix("http://") {
            scheme = .http; rest = url.dropFirst(7)
        } else {
            return nil
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        rest = rest[slash...]
        var host = authority
        var port = scheme == .https ? 443 : 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { guard let p = Int(after.dropFirst()) else { return nil }; port = p }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]) else { return nil }
            port = p
        }
        guard !host.isEmpty, (1...65535).contains(port), !host.contains("@") else { return nil }
        return (scheme, String(host), port, rest.isEmpty ? "/" : String(rest))
    }
}

/// Why an upstream exchange failed.
public enum UpstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Unreachable, refused, reset, DNS or TLS failure (502, 1400).
    case unreachable(String)
    /// An answer that is not usable HTTP, or too large (502, 1401).
    case badResponse(String)
    /// No complete answer before the deadline (504, 1408).
    case timeout
    /// The request cannot be sent as it is: a header or the target could end a line (400, 1002).
    /// Refused before it reaches the pool: no connection is taken or closed for it.
    case invalidRequest(String)

    public var description: String {
        switch self {
        case let .unreachable(why): return "upstream unreachable: \(why)"
        case let .badResponse(why): return "upstream answer unusable: \(why)"
        case .timeout: return "upstream did not answer in time"
        case let .invalidRequest(why): return "request not sent: \(why)"
        }
    }
}

/// Header names that describe one connection, never forwarded (RFC 9110 §7.6.1).
public let hopByHopHeaders: Set<String> = [
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
    "upgrade", "proxy-connection",
]

/// `headers` fit to forward: without hop-by-hop ones, those the `Connection` header names,
/// `Expect` (the proxy has the whole body: a `100-continue` would only stall the upstream), and
/// any whose name is not an RFC 9110 token (`Transfer-Encoding :` with a space must not slip
/// past the hop-by-hop filter to a lenient upstream).
public func withoutHopByHop(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
    // Runs on every proxied message in both directions: names compared in place by length
    // first, no lowercased copies, one allocation for the result. The names a `Connection`
    // header lists go into a set (lowercased; the head's size limit bounds them), so each header
    // is one lookup: compared with each listed name, a hostile list of thousands was quadratic.
    var named: Set<String> = []
    for (name, value) in headers where name.caseInsensitiveEquals("connection") {
        for option in value.split(separator: ",") {
            named.insert(option.trimmingCharacters(in: .whitespaces).lowercased())
        }
    }
    var out: [(name: String, value: String)] = []
    out.reserveCapacity(headers.count)
    for header in headers where HTTPSyntax.isToken(header.name) && !isHopByHopOrExpect(header.name) {
        if !named.isEmpty && named.contains(header.name.lowercased()) { continue }
        out.append(header)
    }
    return out
}

/// Whether `name` is one of ``hopByHopHeaders`` or `Expect`, in any case.
func isHopByHopOrExpect(_ name: String) -> Bool {
    switch name.utf8.count {
    case 2: return name.caseInsensitiveEquals("te")
    case 6: return name.caseInsensitiveEquals("expect")
    case 7: return name.caseInsensitiveEquals("trailer") || name.caseInsensitiveEquals("upgrade")
    case 10: return name.caseInsensitiveEquals("connection") || name.caseInsensitiveEquals("keep-alive")
    case 16: return name.caseInsensitiveEquals("proxy-connection")
    case 17: return name.caseInsensitiveEquals("transfer-encoding")
    case 18: return name.caseInsensitiveEquals("proxy-authenticate")
    case 19: return name.caseInsensitiveEquals("proxy-authorization")
    default: return false
    }
}
