import CloakCore
import CloakVault

extension FormSubmission {
    /// The entries with their values, and when the earliest intent among the records expires
    /// (an anonymous caller's; nil when none).
    typealias Resolved = (entries: [(key: String, value: String)], intentExpiresAt: Int64?)

    /// Runs `body` with the resolved entries: at once when nothing needs an alias, else after the vault.
    func resolve(
        with vault: VaultClient, caller: AliasCaller, _ body: @escaping @Sendable (Result<Resolved, CloakError>) -> Void
    ) {
        guard !requests.isEmpty else { return body(.success((resolved([]), nil))) }
        let plan = self
        vault.createAliases(requests, caller: caller) { result in
            switch result {
            case let .success(records):
                body(.success((plan.resolved(records), records.filter(\.intent).compactMap(\.expiresAt).min())))
            case let .failure(error): body(.failure(error.cloakError { "field \(plan.key(ofRequest: $0))" }))
            }
        }
    }
}
