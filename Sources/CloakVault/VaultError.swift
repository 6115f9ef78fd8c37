import CloakCore

/// A vault failure, mapped by the service to its VGSError code.
package enum VaultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A value cannot take its format (1002); `index` is its position in the request.
    case invalidInput(index: Int, reason: String)
    /// No such alias, or it expired (1404).
    case notFound
    /// The store failed, is full or did not answer in time (1500). What the request wrote may
    /// have been committed all the same (a commit after the time limit's answer, a connection lost
    /// after COMMIT, a PostgreSQL batch's new records): the service says the outcome is unknown.
    case unavailable(String)
    /// A limit of the caller's refused the request; nothing was written (1429, `Retry-After`).
    case refused(retryAfter: Int, reason: String)
    /// Intents hold their whole share of a bucket this request needed; nothing was written
    /// (1429, `Retry-After` until the bucket's earliest intent expires).
    case bucketFull(format: AliasFormatName, retryAfter: Int)

    package var description: String {
        switch self {
        case let .invalidInput(index, reason): return "item \(index): \(reason)"
        case .notFound: return "no such alias"
        case let .unavailable(reason): return reason
        case let .refused(_, reason): return reason
        case let .bucketFull(format, _):
            return
                "anonymous callers hold their share of this value's \(format.rawValue) aliases; a token with aliases:create is not limited so"
        }
    }
}

/// Why a vault could not open.
package struct VaultOpenError: Error, Sendable, CustomStringConvertible {
    package let description: String
}
