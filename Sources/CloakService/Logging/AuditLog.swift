import CloakCore
import CloakVault
import Logging
import Synchronization

/// Where audit lines go: the service's logger at `info`, message `audit`; and, given the vault,
/// the store's audit events (an event not yet `stored` is kept with the vault's next commit). An
/// event is an ``AuditEvent/Draft`` from the moment it is made to its seal in the store: who
/// (token id, client address), what (the action), on which alias (its keyed reference,
/// ``CloakVault/Vault/auditReference(_:)``: never the alias, never the value), the result, and a
/// few named facts (`via`, `ttl_s`, …). Events made outside a request (a node adopting tokens or a BIN table, a guess
/// limit's refusal, a route's file reveal) are kept this way: nothing waits on them.
struct AuditLog: Sendable {
    let logger: Logger
    var vault: Vault? = nil
    /// Where the service's lines go: a request's audit lines are written there directly, in the
    /// handler's format (``LogLine``), without swift-log's metadata dictionary.
    var sink: LogSink? = nil

    /// Writes `entry`'s line, and keeps it in the store unless it is there (`stored`: the vault
    /// wrote it with the change it records).
    func record(_ entry: AuditEvent.Draft, stored: Bool = false, level: Logger.Level = .info) {
        defer { if !stored, let vault { keep(entry, in: vault) } }
        if let sink, level == .info {
            var fields: [(key: String, value: String)] = [
                ("action", entry.action.text), ("token_id", entry.tokenID), ("client", entry.client),
                ("result", entry.result.text),
            ]
            if let reference = entry.aliasReference { fields.append(("alias_ref", reference)) }
            // As the handler: a later fact of the same name wins; keys sorted.
            for fact in entry.facts {
                if let index = fields.firstIndex(where: { $0.key == fact.key }) {
                    fields[index].value = fact.value
                } else {
                    fields.append((fact.key, fact.value))
                }
            }
            fields.sort { $0.key < $1.key }
            var line = LogLine("audit")
            for field in fields { line.field(named: field.key, field.value) }
            return line.write(to: sink)
        }
        var metadata: Logger.Metadata = [
            "action": .string(entry.action.text), "token_id": .string(entry.tokenID), "client": .string(entry.client),
            "result": .string(entry.result.text),
        ]
        if let reference = entry.aliasReference { metadata["alias_ref"] = .string(reference) }
        for fact in entry.facts { metadata[fact.key] = .string(fact.value) }
        logger.log(level: level, "audit", metadata: metadata)
    }

    /// Several events, none in the store yet: each line written, all kept in one vault job.
    func record(_ entries: [AuditEvent.Draft], level: Logger.Level = .info) {
        var unlogged = self
        unlogged.vault = nil
        for entry in entries { unlogged.record(entry, stored: true, level: level) }
        let unstored = entries
        guard let vault, !unstored.isEmpty else { return }
        vault.recordAudit(unstored) { [logger] result in
            guard case let .failure(error) = result else { return }
            logger.error(
                "audit events could not be stored",
                metadata: [
                    "count": .stringConvertible(unstored.count), "error": .string(StoreError.forClients("\(error)")),
                ])
        }
    }

    private func keep(_ entry: AuditEvent.Draft, in vault: Vault) {
        vault.recordAudit([entry]) { [logger] result in
            guard case let .failure(error) = result else { return }
            logger.error(
                "an audit event could not be stored",
                metadata: ["action": .string(entry.action.text), "error": .string(StoreError.forClients("\(error)"))])
        }
    }
}

/// What a handler of an audited endpoint did, one entry per alias (or per session) it acted on,
/// read by ``AuditMiddleware`` once the answer is made. Made per request only for endpoints that
/// declare an audit action (``Endpoint/audit``); the handler's vault completions may add to it
/// from the request's loop after the handler returned.
///
/// It is also the vault's audit subject (``VaultAuditSubject``): a change the request makes
/// (create, update, delete) notes its own entries in the change's transaction, and they arrive
/// here already stored. The door stores the rest before the answer leaves (``Door``).
final class Outcome: VaultAuditSubject {
    /// Each event, and whether it is in the store already.
    private let entries = Mutex<[(event: AuditEvent.Draft, stored: Bool)]>([])
    /// The endpoint's action, the caller's token id and address: each entry's defaults.
    let action: AuditAction
    let tokenID: String
    let client: String

    /// Facts every entry of this outcome carries (a route's `via` and id).
    let facts: [(String, String)]
    /// The one vault operation this outcome audits (a route's reveals, not its redactions);
    /// nil: every operation its calls make.
    let only: VaultOperation?
    /// Whether its entries are also `audit` log lines (``storeOnly``: not).
    let logged: Bool

    /// Actions kept in the store's trail only, not written as log lines: a create is the most
    /// frequent audited action by far, its line doubled a tokenizing service's log and cost a
    /// create 8k instructions (callgrind), and its event is in the store, searchable and
    /// exportable (docs/audit.md). Before the trail, creates had no audit line either.
    static let storeOnly: Set<AuditAction> = [.create]

    init(
        action: AuditAction, tokenID: String, client: String, facts: [(String, String)] = [],
        only: VaultOperation? = nil
    ) {
        self.action = action
        self.tokenID = tokenID
        self.client = client
        self.facts = facts
        self.only = only
        self.logged = !Self.storeOnly.contains(action)
    }

    /// Notes one alias acted on (by its keyed reference) and the result.
    func alias(_ reference: String?, _ result: AuditResult, tokenID: String? = nil, facts: [(String, String)] = []) {
        let entry = AuditEvent.Draft(
            made: action, tokenID: tokenID ?? self.tokenID, client: client, aliasReference: reference,
            result: result, facts: facts)
        entries.withLock { $0.append((entry, false)) }
    }

    /// Everything noted so far, in order, and whether each is in the store.
    var recorded: [(event: AuditEvent.Draft, stored: Bool)] { entries.withLock { $0 } }

    /// The events not yet in the store, marked stored from now on (the caller stores them).
    func takeUnstored() -> [AuditEvent.Draft] {
        entries.withLock { entries in
            var out: [AuditEvent.Draft] = []
            for index in entries.indices where !entries[index].stored {
                out.append(entries[index].event)
                entries[index].stored = true
            }
            return out
        }
    }

    func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation)
        -> AuditEvent.Draft?
    {
        if let only, operation != only { return nil }
        return AuditEvent.Draft(
            made: action, tokenID: tokenID, client: client, aliasReference: aliasReference, result: result,
            facts: facts, at: at)
    }

    func noted(_ drafts: [AuditEvent.Draft], stored: Bool) {
        // Stored and never a line: nothing is left to do with it.
        if stored && !logged { return }
        entries.withLock { $0 += drafts.map { ($0, stored) } }
    }
}
