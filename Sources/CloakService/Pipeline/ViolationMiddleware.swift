import CloakCore
import CloakHTTP

/// Refuses a request the server marked before routing (too large, conflicting lengths, broken
/// framing): its body was never read, so nothing else may look at it.
struct ViolationMiddleware: Middleware {
    func request(_ context: inout RequestContext) throws(CloakError) -> HTTPResponse? {
        if let violation = context.request.violation { throw Self.error(for: violation) }
        return nil
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
        }
    }
}
