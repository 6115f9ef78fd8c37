import CloakCore

/// The HTTP methods Cloak routes; any other method is answered 501 by the server.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case GET, POST, HEAD, PUT, DELETE, OPTIONS, TRACE, CONNECT, PATCH
}

/// A request as handed to a handler, read by ``RequestParser`` on its loop thread.
///
/// Its description and mirror never show the body or header values (they may hold card data or
/// tokens): `HTTPRequest(POST /tokens, 3 headers, body 412 bytes)`.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var method: HTTPMethod
    /// The path, percent-decoded, without the query.
    public var path: String
    /// The path as the client sent it (still percent-encoded): what a proxy forwards.
    public var rawPath: String
    /// The raw query string (after `?`), if any.
    public var query: String?
    /// Header fields in arrival order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body: whole, or (for an endpoint that streams it, ``RequestBodyDelivery``) a
    /// stream read as the client sends it.
    public var content: HTTPBody
    /// A whole body's bytes (empty for a streamed one).
    public var body: [UInt8] {
        get { content.bytes }
        set { content = .bytes(newValue) }
    }
    /// The request id: the client's `X-Request-Id` when it is well formed, else a new one.
    public var requestID: String
    /// Set when the server refused the request before routing (the body is then empty).
    public var violation: HTTPViolation?
    /// The loop the request arrived on (nil for requests made outside a server).
    public var loop: LoopHandle?
    /// The client's address (numeric, without the port): the key of per-client limits.
    public var remoteAddress: String = ""
    /// Whether a trusted proxy's forwarding header may name the client: false on a PROXY
    /// protocol connection whose header named no client (`UNKNOWN`, an unspecified family),
    /// where that header would be the client's own text.
    public var forwardingTrusted = true
    /// On a forward-proxy door: where the request is going (from its tunnel or absolute-form target).
    public var proxyTarget: ProxyTarget?
    /// The body, as it arrives, for a request whose endpoint streams it (``RequestBodyDelivery``);
    /// ``body`` is then empty.
    public var bodyStream: BodyStream? { content.stream }
    /// What the service's router found on the head (``HeadRoute``), when the server asked it:
    /// the handler takes it rather than route the request again.
    public var route: (any Sendable)?

    public init(
        method: HTTPMethod, path: String, query: String? = nil, headers: [(name: String, value: String)] = [],
        body: [UInt8] = [], requestID: String = ""
    ) {
        self.method = method
        self.path = path
        self.rawPath = path
        self.query = query
        self.headers = headers
        self.content = .bytes(body)
        self.requestID = requestID
    }

    public var description: String {
        "HTTPRequest(\(method.rawValue) \(path.utf8.count)-byte path, \(headers.count) headers, body \(body.count) bytes)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self, children: ["method": method, "headers": headers.count, "bodyBytes": body.count], displayStyle: .struct
        )
    }

    /// The first value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of a header, matched case-insensitively.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }
}

/// A response: status, headers and body. The server adds `Date` (unless given),
/// `Content-Length` and `Connection` (``MessageWriter``).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    /// The body: whole, or a stream sent as it is produced, of the length it promises.
    public var content: HTTPBody
    /// A whole body's bytes (empty for a streamed one).
    public var body: [UInt8] {
        get { content.bytes }
        set { content = .bytes(newValue) }
    }

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.content = .bytes(body)
    }

    public init(status: Int, headers: [(name: String, value: String)] = [], content: HTTPBody) {
        self.status = status
        self.headers = headers
        self.content = content
    }

    /// A JSON response with `Content-Type: application/json`.
    public static func json(_ status: Int, _ body: [UInt8], headers: [(name: String, value: String)] = [])
        -> HTTPResponse
    {
        var all: [(name: String, value: String)] = []
        // Room for the server's additions (X-Request-Id, Connection): no copy when it adds them.
        all.reserveCapacity(headers.count + 3)
        all.append(("Content-Type", "application/json"))
        all.append(contentsOf: headers)
        return HTTPResponse(status: status, headers: all, body: body)
    }
}

/// The standard reason phrase for a status code (static text: no string is made per answer).
func reasonPhrase(_ status: Int) -> StaticString {
    switch status {
    case 200: return "OK"
    case 201: return "Created"
    case 202: return "Accepted"
    case 204: return "No Content"
    case 301: return "Moved Permanently"
    case 302: return "Found"
    case 303: return "See Other"
    case 304: return "Not Modified"
    case 307: return "Temporary Redirect"
    case 308: return "Permanent Redirect"
    case 400: return "Bad Request"
    case 401: return "Unauthorized"
    case 403: return "Forbidden"
    case 404: return "Not Found"
    case 405: return "Method Not Allowed"
    case 408: return "Request Timeout"
    case 409: return "Conflict"
    case 410: return "Gone"
    case 413: return "Content Too Large"
    case 414: return "URI Too Long"
    case 422: return "Unprocessable Entity"
    case 429: return "Too Many Requests"
    case 431: return "Request Header Fields Too Large"
    case 500: return "Internal Server Error"
    case 501: return "Not Implemented"
    case 502: return "Bad Gateway"
    case 503: return "Service Unavailable"
    case 507: return "Insufficient Storage"
    case 504: return "Gateway Timeout"
    case 505: return "HTTP Version Not Supported"
    default: return "Status"
    }
}
