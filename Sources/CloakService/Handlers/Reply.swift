import CloakCore
import CloakHTTP
import CloakVault

/// What a handler gives back: an answer now, Cloak's own error now, or work that answers later
/// (exactly once).
///
/// Cloak's errors travel beside their answers (``Failure``), so the door's steps read the code
/// from ``RequestContext/error`` and never from a body, which may be an upstream's. A handler
/// that throws a ``CloakError`` is answered the same way.
enum Reply: Sendable {
    case now(HTTPResponse)
    /// Cloak's own error, answered now: one that needs headers of its own (`Allow` on a 405) or
    /// another status (407), which a thrown error cannot carry.
    case failed(Failure)
    case later(@Sendable (_ finish: Finish) -> Void)
}

extension Reply {
    /// An error of Cloak's and its answer.
    struct Failure: Sendable {
        let error: CloakError
        let response: HTTPResponse

        /// `error` answered with its VGSError body and status (``HTTPResponse/error(_:headers:)``).
        static func error(_ error: CloakError, headers: [(name: String, value: String)] = []) -> Failure {
            Failure(error: error, response: HTTPResponse.error(error, headers: headers))
        }
    }

    /// How `.later` work answers, exactly once, from any thread.
    ///
    /// `finish(response)` answers with what is not an error of Cloak's (a handler's result, an
    /// upstream's answer passed through); `finish(.error(error))` answers with Cloak's error, which
    /// the door's steps then see in ``RequestContext/error``. For `finish(.error(…))` the
    /// overload taking a ``Failure`` is the one chosen (the one taking a response is disfavoured),
    /// so a handler written as `finish(.error(…))` reports its code without naming the type.
    ///
    /// ```swift
    /// return .later { finish in
    ///     vault.reveal(aliases) { result in
    ///         switch result {
    ///         case let .success(found): finish(.json(200, answer(found)))
    ///         case let .failure(error): finish(.error(error.cloakError { _ in "alias" }))
    ///         }
    ///     }
    /// }
    /// ```
    struct Finish: Sendable {
        let answer: @Sendable (HTTPResponse, CloakError?, RouteFacts) -> Void

        /// Answers with `response`, which is not an error of Cloak's.
        @_disfavoredOverload
        func callAsFunction(_ response: HTTPResponse) { answer(response, nil, RouteFacts()) }

        /// Answers with Cloak's error.
        func callAsFunction(_ failure: Failure) { answer(failure.response, failure.error, RouteFacts()) }

        /// Answers with `response`, which is `error`'s answer when `error` is not nil (a route's
        /// exchange says which: ``RouteExchange/Outcome/error``); `steps` names the route's steps
        /// that ran (``RouteCall/stepsRan``), for the access log.
        func callAsFunction(_ response: HTTPResponse, error: CloakError?, route: RouteFacts = RouteFacts()) {
            answer(response, error, route)
        }
    }

    /// What a route did, for the access log: the names of its steps that ran (comma-separated),
    /// and its request selectors (as configured) that took a value and that took none.
    struct RouteFacts: Sendable {
        var steps = ""
        var matched: [String] = []
        var missed: [String] = []

        var isEmpty: Bool { steps.isEmpty && matched.isEmpty && missed.isEmpty }
    }
}

extension CloakError {
    /// A file's content for `metadata`'s record, or why it cannot be served: only a store that
    /// failed is worth retrying (503 with `Retry-After`). Content that is gone is 404; content
    /// that is not the record's (a database writer moved it) is 503 without `Retry-After`.
    static func fileContent(_ lookup: Result<StoredFile?, VaultError>, _ metadata: Vault.FileMetadata)
        -> Result<StoredFile, CloakError>
    {
        guard case let .success(stored) = lookup else {
            return .failure(.storeUnavailable("the file's content could not be read"))
        }
        switch Vault.checkedFile(stored, metadata) {
        case let .success(file): return .success(file)
        case .failure(.notFound):
            return .failure(
                .notFound("the file's content is gone (deleted, expired, or kept: read it by its canonical alias)"))
        case .failure: return .failure(CloakError(.vaultUnavailable, "the file's content is not its record's"))
        }
    }
}
