import CloakCore

/// A vault failure as the VGSError a caller gets: the API's and the jobs' one spelling.
extension VaultError {
    /// The VGSError for a vault failure; `describe` names a failing item (a field, `data[i]`).
    package func cloakError(describe: (Int) -> String) -> CloakError {
        switch self {
        case let .invalidInput(index, reason): return .malformed("\(describe(index)): \(reason)")
        case .notFound: return .notFound("no such alias")
        case let .unavailable(reason):
            // Not "nothing was written": a job answered by vault.store_timeout_ms may still commit,
            // a connection may break after COMMIT, and on PostgreSQL a batch commits its new
            // records before the rest of a request runs (issue 44). A retry with the same values
            // finds a PERSISTENT value stored (one record per value); nothing is left without an
            // alias for long (PostgreSQLAliasStore.deleteUnaliased).
            return .storeUnavailable(
                "the vault is unavailable: \(StoreError.forClients(reason)); the outcome is unknown (values may "
                    + "have been stored): retry with the same values")
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

extension CloakError {
    /// A 1500 for a store that failed or did not answer, with `Retry-After` (and
    /// `extraInfo.retryAfterSeconds`) of ``StoreError/retryAfterSeconds``: by then a shared store
    /// has been tried again. Not for a server that runs without a vault, which no wait mends.
    package static func storeUnavailable(_ message: String) -> CloakError {
        CloakError(.vaultUnavailable, message, extraInfo: [("retryAfterSeconds", .int(StoreError.retryAfterSeconds))])
    }
}
