import CloakCore
import CloakHTTP
import CloakVault

/// Carries out a ``MessageSelection`` with the vault: every redacted value of the message in one
/// alias job, every revealed alias in one reveal job, then the message rewritten.
///
/// A selected value that is not a live alias (unknown, deleted, expired, or not an alias at
/// all) fails the whole message with 1422 naming its selector; nothing of it goes on.
struct MessageTransformer: Sendable {
    let vault: VaultClient
    /// Who aliases the redacted values.
    let caller: AliasCaller

    /// Longest text looked up as an alias: anything longer is not one of ours.
    static let maxAliasLength = 256

    /// The replacement text of every item, in order; `completion` runs once, on the request's loop
    /// (or at once when nothing needs the vault).
    func run(_ selection: MessageSelection, completion: @escaping @Sendable (Result<[String], CloakError>) -> Void) {
        let items = selection.items
        // A value going into a header must stay one header: any text can be stored under some
        // formats, and a CR or LF revealed into a header would split the message.
        let checked: @Sendable (Result<[String], CloakError>) -> Void = { result in
            if case let .success(texts) = result {
                for (item, text) in zip(items, texts) where item.isHeader && !HTTPSyntax.isFieldValue(text) {
                    return completion(
                        .failure(.malformed("the value for header \(item.selector) cannot be sent in a header")))
                }
            }
            completion(result)
        }
        let redacted = items.indices.filter { items[$0].operation.action == .redact }
        let requests = redacted.map { i in
            AliasRequest(
                value: items[i].text.value, format: items[i].operation.format, storage: items[i].operation.storage)
        }
        do { try Vault.check(requests, caller: caller) } catch {
            return completion(.failure(error.cloakError { "selected value \(items[redacted[$0]].selector)" }))
        }
        let revealed = items.indices.filter { items[$0].operation.action == .reveal }
        for i in revealed where items[i].text.value.isEmpty || items[i].text.value.utf8.count > Self.maxAliasLength {
            return completion(.failure(Self.notFound(items[i].selector)))
        }
        let original = items.map(\.text.value)
        let vault = self.vault
        let reveal: @Sendable ([String]) -> Void = { soFar in
            guard !revealed.isEmpty else { return checked(.success(soFar)) }
            let aliases = revealed.map { items[$0].text.value }
            // As every reveal a token asks for: each alias one request of its rate, and aliases
            // not found counted as guesses in their buckets (a route answers 422 for a miss and
            // forwards a hit: a scan of candidates would find live aliases, and their cards).
            vault.revealGuessing(Array(Set(aliases))) { result in
                switch result {
                case let .failure(error):
                    checked(.failure(error.cloakError { _ in "selected alias" }))
                case let .success(found):
                    var out = soFar
                    for i in revealed {
                        guard let record = found[items[i].text.value] else {
                            return checked(.failure(Self.notFound(items[i].selector)))
                        }
                        out[i] = record.value
                    }
                    checked(.success(out))
                }
            }
        }
        guard !requests.isEmpty else { return reveal(original) }
        vault.createAliases(requests, caller: caller) { result in
            switch result {
            case let .failure(error):
                completion(.failure(error.cloakError { "selected value \(items[redacted[$0]].selector)" }))
            case let .success(records):
                var replacements = original
                for (k, i) in redacted.enumerated() {
                    let asked = requests[k]
                    replacements[i] =
                        records[k].aliases.first { $0.matches(asked.format, luhnValid: asked.luhnValid) }?.alias ?? ""
                }
                reveal(replacements)
            }
        }
    }

    static func notFound(_ selector: String) -> CloakError {
        CloakError(
            .aliasNotFound, "\(selector) does not hold a live alias (unknown, deleted or expired); nothing was sent")
    }
}
