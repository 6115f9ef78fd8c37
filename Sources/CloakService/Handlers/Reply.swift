import CloakCore
import CloakHTTP
import CloakVault

/// What a handler gives back: an answer now, or work that answers later (exactly once).
enum Reply: Sendable {
    case now(HTTPResponse)
    case later(@Sendable (_ finish: @escaping @Sendable (HTTPResponse) -> Void) -> Void)
}

extension VaultError {
    /// The VGSError for a vault failure; `describe` names a failing item (a field, `data[i]`).
    func cloakError(describe: (Int) -> String) -> CloakError {
        switch self {
        case let .invalidInput(index, reason): return .malformed("\(describe(index)): \(reason)")
        case .notFound: return .notFound("no such alias")
        case let .unavailable(reason):
            return CloakError(.vaultUnavailable, "the vault is unavailable: \(reason); nothing was written")
        case let .bucketFull(_, retryAfter):
            return CloakError(
                .tooManyRequests, "\(description); nothing was written; retry after \(retryAfter) s",
                extraInfo: [("retryAfterSeconds", .int(retryAfter))])
        case let .refused(retryAfter, reason):
            return CloakError(
                .tooManyRequests, "\(reason); nothing was written; retry after \(retryAfter) s",
                extraInfo: [("retryAfterSeconds", .int(retryAfter))])
        }
    }
}
