import CloakCore

extension CloakError.Code {
    /// The HTTP status each VGSError code is answered with (SPEC §6): CloakCore keeps the codes,
    /// the service decides how they go on the wire.
    var httpStatus: Int {
        switch self {
        case .inputDataIsNotValid, .aliasNotFound: return 422
        case .malformedRequest, .invalidConfigurationURL: return 400
        case .payloadTooLarge: return 413
        case .invalidAccessToken: return 401
        case .forbidden: return 403
        case .unexpectedResponseType, .unexpectedResponseDataFormat: return 502
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .upstreamTimeout: return 504
        case .tooManyRequests: return 429
        case .vaultUnavailable, .tooManyConnections: return 503
        case .insufficientStorage: return 507
        }
    }
}
