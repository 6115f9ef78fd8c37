import CLibevent
import Glibc

/// An evhttp request: one a client sent (read on its loop, answered once), or one Cloak sends
/// upstream (its answer read in its completion).
struct EvRequest {
    let raw: OpaquePointer

    // MARK: A served request

    var method: HTTPMethod? { Self.method(evhttp_request_get_command(raw)) }
    var connection: EvConnection? { evhttp_request_get_connection(raw).map(EvConnection.init) }
    var inputHeaders: EvHeaders? { evhttp_request_get_input_headers(raw).map(EvHeaders.init) }

    /// The request line says HTTP/1.0.
    var isHTTP10: Bool { CLibevent_request_is_http10(raw) != 0 }
    var outputHeaders: EvHeaders? { evhttp_request_get_output_headers(raw).map(EvHeaders.init) }
    var inputBody: EvBuffer? { evhttp_request_get_input_buffer(raw).map(EvBuffer.init) }
    var outputBody: EvBuffer? { evhttp_request_get_output_buffer(raw).map(EvBuffer.init) }

    /// The target's path as sent (percent-encoded, `/` when empty), decoded, and its query.
    var target: (rawPath: String, path: String, query: String?) {
        var path = "/", rawPath = "/"
        var query: String?
        if let uri = evhttp_request_get_evhttp_uri(raw) {
            if let encoded = evhttp_uri_get_path(uri), encoded.pointee != 0 {
                rawPath = String(cString: encoded)
                if strchr(encoded, Int32(UInt8(ascii: "%"))) == nil {
                    path = rawPath  // nothing to decode: the same string
                } else if let decoded = evhttp_uridecode(encoded, 0, nil) {
                    path = String(cString: decoded)
                    Glibc.free(decoded)
                }
            }
            if let q = evhttp_uri_get_query(uri) { query = String(cString: q) }
        }
        return (rawPath, path, query)
    }

    /// The scheme, host (lowercased) and port of an absolute-form target (`POST http://h/p`).
    var absoluteTarget: (scheme: String, host: String, port: Int)? {
        guard let uri = evhttp_request_get_evhttp_uri(raw), let scheme = evhttp_uri_get_scheme(uri),
            let host = evhttp_uri_get_host(uri), host.pointee != 0
        else { return nil }
        return (String(cString: scheme).lowercased(), String(cString: host).lowercased(), Int(evhttp_uri_get_port(uri)))
    }

    /// The host (lowercased) and port of a CONNECT's `host:port`; nil without both.
    var authority: (host: String, port: Int)? {
        guard let uri = evhttp_request_get_evhttp_uri(raw), let host = evhttp_uri_get_host(uri), host.pointee != 0,
            evhttp_uri_get_port(uri) > 0
        else { return nil }
        return (String(cString: host).lowercased(), Int(evhttp_uri_get_port(uri)))
    }

    /// Answers with `status`, the headers and body already added, and a static reason phrase.
    func reply(_ status: Int, reason: StaticString) {
        reason.utf8Start.withMemoryRebound(to: CChar.self, capacity: reason.utf8CodeUnitCount + 1) {
            evhttp_send_reply(raw, Int32(status), $0, nil)
        }
    }

    /// evhttp's own error answer (no body of ours).
    func replyError(_ status: Int) { evhttp_send_error(raw, Int32(status), nil) }

    /// `callback` runs when the answer has been written out.
    func onWritten(
        _ callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void,
        _ argument: UnsafeMutableRawPointer
    ) {
        evhttp_request_set_on_complete_cb(raw, callback, argument)
    }

    // MARK: evhttp's client (the reference the upstream client's parser is compared with)

    /// A client request: `callback` gets it when its answer is complete (nil or a response code
    /// of 0 when none came), with `argument`.
    static func client(
        _ callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void,
        _ argument: UnsafeMutableRawPointer
    ) -> EvRequest? {
        evhttp_request_new(callback, argument).map(EvRequest.init)
    }

    /// The answer's status (0: none came).
    var responseCode: Int { Int(evhttp_request_get_response_code(raw)) }

    // MARK: Methods

    static func method(_ command: evhttp_cmd_type) -> HTTPMethod? {
        switch command {
        case EVHTTP_REQ_GET: return .GET
        case EVHTTP_REQ_POST: return .POST
        case EVHTTP_REQ_HEAD: return .HEAD
        case EVHTTP_REQ_PUT: return .PUT
        case EVHTTP_REQ_DELETE: return .DELETE
        case EVHTTP_REQ_OPTIONS: return .OPTIONS
        case EVHTTP_REQ_TRACE: return .TRACE
        case EVHTTP_REQ_CONNECT: return .CONNECT
        case EVHTTP_REQ_PATCH: return .PATCH
        default: return nil
        }
    }

    static func command(_ method: HTTPMethod) -> evhttp_cmd_type {
        switch method {
        case .GET: return EVHTTP_REQ_GET
        case .POST: return EVHTTP_REQ_POST
        case .HEAD: return EVHTTP_REQ_HEAD
        case .PUT: return EVHTTP_REQ_PUT
        case .DELETE: return EVHTTP_REQ_DELETE
        case .OPTIONS: return EVHTTP_REQ_OPTIONS
        case .TRACE: return EVHTTP_REQ_TRACE
        case .CONNECT: return EVHTTP_REQ_CONNECT
        case .PATCH: return EVHTTP_REQ_PATCH
        }
    }

    /// Every method evhttp knows: the router, not evhttp, answers 405 for the ones a path lacks.
    static let allMethods: UInt32 =
        EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue
        | EVHTTP_REQ_DELETE.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_TRACE.rawValue
        | EVHTTP_REQ_CONNECT.rawValue | EVHTTP_REQ_PATCH.rawValue
}
