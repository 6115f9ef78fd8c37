import CloakCore
import Logging
import Synchronization

/// One audit line: who (token id, client address), what (the action), on which alias (its keyed
/// reference, ``CloakVault/Vault/auditReference(_:)``: never the alias, never the value), the
/// result, and a few named facts (`via`, `ttl_s`, …). Every audit line of a request is written
/// through ``AuditLog`` by ``AuditMiddleware``, in the response phase.
struct AuditEntry: Sendable {
    var action: String
    var tokenID: String
    var client: String
    var aliasReference: String?
    var result: String
    var facts: [(key: String, value: String)] = []
}

/// Where audit lines go: the service's logger at `info`, message `audit`.
struct AuditLog: Sendable {
    let logger: Logger

    func record(_ entry: AuditEntry, level: Logger.Level = .info) {
        var metadata: Logger.Metadata = [
            "action": .string(entry.action), "token_id": .string(entry.tokenID), "client": .string(entry.client),
            "result": .string(entry.result),
        ]
        if let reference = entry.aliasReference { metadata["alias_ref"] = .string(reference) }
        for (key, value) in entry.facts { metadata[key] = .string(value) }
        logger.log(level: level, "audit", metadata: metadata)
    }
}

/// What a handler of an audited endpoint did, one entry per alias (or per session) it acted on,
/// read by ``AuditMiddleware`` once the answer is made. Made per request only for endpoints that
/// declare an audit action (``Endpoint/audit``); the handler's vault completions may add to it
/// from the request's loop after the handler returned.
final class Outcome: Sendable {
    private let entries = Mutex<[AuditEntry]>([])
    /// The endpoint's action, the caller's token id and address: each entry's defaults.
    let action: String
    let tokenID: String
    let client: String

    init(action: String, tokenID: String, client: String) {
        self.action = action
        self.tokenID = tokenID
        self.client = client
    }

    /// Notes one alias acted on (by its keyed reference) and the result.
    func alias(_ reference: String?, _ result: String, tokenID: String? = nil, facts: [(String, String)] = []) {
        let entry = AuditEntry(
            action: action, tokenID: tokenID ?? self.tokenID, client: client, aliasReference: reference,
            result: result, facts: facts.map { (key: $0.0, value: $0.1) })
        entries.withLock { $0.append(entry) }
    }

    /// Everything noted so far, in order.
    var recorded: [AuditEntry] { entries.withLock { $0 } }
}
