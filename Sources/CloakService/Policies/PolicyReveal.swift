import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// `GET /aliases` under a token's access policies (issue 77): each record the vault found is
/// judged by the token's compiled policies (``TokenAccess``) and leaves whole, masked, redacted,
/// or not at all. A denied value is answered exactly as an alias that does not exist; a masked
/// or redacted one carries only the alias it was asked by (another format's alias, such as a
/// card's BIN and last four, would show more than the mask). What a policy changed is an audit
/// event naming the policy, the rule and the caller's `Cloak-Access-Reason`, scrubbed, which
/// commits with the reveal's own (``Vault/reveal(_:judge:completion:)``).
struct PolicyReveal: Sendable {
    let access: TokenAccess
    let context: AccessContext
    /// Who the audit events name: the request's token and client.
    let tokenID: String
    let client: String

    /// The header a caller gives its reason in (a rule's `when.reason`).
    static let reasonHeader = "Cloak-Access-Reason"

    init(access: TokenAccess, request: HTTPRequest, tokenID: String, client: String, now: Date = Date()) {
        self.access = access
        self.tokenID = tokenID
        self.client = client
        context = AccessContext(
            client: IPAddress(request.remoteAddress), reason: request.header(Self.reasonHeader),
            localTime: { zone in Self.localTime(zone, at: now) })
    }

    /// `record`, found for `alias`, as the token may see it (nil: not at all), with the audit
    /// event of what a policy changed under the alias's keyed `reference`.
    func judge(_ record: RevealedRecord, alias: String, reference: String?) -> RevealVerdict {
        let decision = access.decide(.reveal, Self.resource(record, alias: alias), context)
        switch decision.outcome {
        case .deny:
            return RevealVerdict(record: nil, event: event(.policyDeny, reference, decision))
        case .allow(.plain):
            return RevealVerdict(record: record)
        case let .allow(transform):
            var shown = record
            switch transform {
            case let .mask(mask): shown.value = mask.apply(record.value)
            case .redact, .plain: shown.value = ValueMask.redacted
            }
            shown.aliases = record.aliases.filter { $0.alias == alias }
            shown.group = nil
            // A card's attributes come from its BIN: not for a value seen masked.
            shown.metadata[RevealedRecord.attributesKey] = nil
            return RevealVerdict(
                record: shown, event: event(transform == .redact ? .policyRedact : .policyMask, reference, decision))
        }
    }

    /// What a policy changed, as an audit event: the deciding policy and rule (`none` for a
    /// default deny) and the caller's reason, scrubbed of card numbers.
    private func event(_ action: AuditAction, _ reference: String?, _ decision: TokenAccess.Decision)
        -> AuditEvent.Draft
    {
        var facts = [("policy", decision.policy ?? "none"), ("rule", decision.rule ?? "none")]
        if let reason = context.reason { facts.append(("reason", Redaction.scrub(reason, limit: 200))) }
        return AuditEvent.Draft(
            made: action, tokenID: tokenID, client: client, aliasReference: reference,
            result: action == .policyDeny ? .refused : .ok, facts: facts)
    }

    /// What the engine knows of a revealed record: its classifiers, the format of the alias it
    /// was asked by, the form it was stored through (`form:<name>`), its metadata; never the value.
    static func resource(_ record: RevealedRecord, alias: String) -> AccessResource {
        AccessResource(
            classifiers: record.classifiers,
            format: record.aliases.first { $0.alias == alias }?.format.rawValue ?? "",
            form: FormSubmission.form(ofClassifiers: record.classifiers),
            metadata: record.metadata, isFile: record.classifiers.contains(Vault.fileClassifier))
    }

    /// The weekday (1 Monday … 7 Sunday) and the minute of the day at `date` in the IANA `zone`;
    /// nil for a zone this node does not know (a window then never holds).
    static func localTime(_ zone: String, at date: Date) -> (weekday: Int, minute: Int)? {
        guard let timeZone = TimeZone(identifier: zone) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        guard let weekday = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return nil }
        // Foundation counts from Sunday (1); the engine from Monday.
        return ((weekday + 5) % 7 + 1, hour * 60 + minute)
    }
}
