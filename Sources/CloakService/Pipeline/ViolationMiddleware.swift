import CloakCore
import CloakHTTP

/// Refuses a request the server marked before routing (too large, conflicting lengths, broken
/// framing): its body was never read, so nothing else may look at it.
struct ViolationMiddleware: Middleware {
    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        guard let violation = context.request.violation else { return nil }
        let error = Self.error(for: violation)
        guard violation.status != error.code.httpStatus else { throw error }
        // 414, 431 and 505 have no VGSError code of their own: the body of 1002, the status
        // RFC 9112 and RFC 6585 give.
        var response = HTTPResponse.error(error)
        response.status = violation.status
        return response
    }

    static func error(for violation: HTTPViolation) -> CloakError {
        switch violation {
        case let .bodyTooLarge(limit):
            return CloakError(
                .payloadTooLarge, "the body is larger than \(limit) bytes",
                extraInfo: [("maxBodyBytes", .int(limit))])
        case .conflictingContentLength:
            return .malformed("the request has conflicting Content-Length headers")
        case .invalidHeaderName:
            return .malformed("a header name is not a token (no spaces or control characters before the colon)")
        case let .malformedFraming(reason):
            return .malformed("the request breaks strict HTTP/1.1 framing (\(reason)); the connection is closed")
        case .headTooLarge:
            return .malformed("the request head is larger than the server reads; the connection is closed")
        case .requestLineTooLong:
            return .malformed("the request line is longer than the server reads; the connection is closed")
        case .unsupportedVersion:
            return .malformed("only HTTP/1.1 and HTTP/1.0 are served; the connection is closed")
        case .methodNotImplemented:
            return .malformed("the method is not one the server implements; the connection is closed")
        }
    }
}
