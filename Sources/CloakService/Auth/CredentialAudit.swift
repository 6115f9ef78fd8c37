import CloakCore
import CloakVault
import Foundation
import Logging

/// The audit lines of changes to API credentials made outside a request, in the node's format
/// (``JSONLogHandler``: one JSON object a line, message `audit`, written by ``AuditLog``):
/// `cloak tokens` writes them to its standard error, where the operator (or the job that ran
/// it) reads them, beside the line in the store's trail. Nodes log the changes they adopt
/// themselves (``CredentialRefresh``). Ids and scopes only: never a secret, nor a digest.
///
/// ```json
/// {"ts":"…","level":"info","msg":"audit","action":"tokens_create","client":"cli","result":"ok",
///  "scopes":"aliases:create","serial":"1767225600000","subject":"batch","token_id":"cli:alice"}
/// ```
package struct CredentialAudit: Sendable {
    let log: AuditLog
    /// Who made the change (`cli:<user>`): the line's `token_id`, as a node's line names the token
    /// that made a change (no token id holds a colon).
    let actor: String

    package init(actor: String, sink: @escaping LogSink) {
        self.actor = actor
        self.log = AuditLog(logger: Logger(label: "cloak") { label in JSONLogHandler(label: label, sink: sink) })
    }

    /// Lines written at once to standard error (the command exits right after: nothing queued).
    package static func standardError(actor: String) -> CredentialAudit {
        CredentialAudit(actor: actor) { line in
            var bytes = Array(line)
            bytes.append(0x0A)
            FileHandle.standardError.write(Data(bytes))
        }
    }

    package func created(_ created: CredentialAdministration.Created) {
        record(
            .tokensCreate, .ok,
            [
                ("subject", created.token.id), ("scopes", created.token.scopes.texts.joined(separator: ",")),
                ("serial", String(created.serial)),
            ])
    }

    package func revoked(_ revoked: CredentialAdministration.Revoked) {
        var facts = [("subject", revoked.token.id), ("serial", String(revoked.serial))]
        if !revoked.descendants.isEmpty { facts.append(("descendants", revoked.descendants.joined(separator: ","))) }
        if revoked.shadowed { facts.append(("yaml_token_stays", "true")) }
        record(.tokensRevoke, .ok, facts)
    }

    package func signed(_ signed: CredentialAdministration.Signed) {
        record(.tokensSign, .ok, [("signed", signed.ids.joined(separator: ",")), ("serial", String(signed.serial))])
    }

    /// A change refused (nothing changed): the action, the id it named, and why.
    package func refused(_ action: AuditAction, subject: String?, reason: String) {
        var facts = [("reason", reason)]
        if let subject { facts.append(("subject", subject)) }
        record(action, .refused, facts)
    }

    private func record(_ action: AuditAction, _ result: AuditResult, _ facts: [(String, String)]) {
        log.record(
            AuditEvent.Draft(
                made: action, tokenID: actor, client: "cli", aliasReference: nil, result: result,
                facts: facts))
    }
}
