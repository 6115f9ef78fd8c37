import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// `GET /admin/audit` (scope `audit:read`): the store's audit events, newest first, filtered by
/// time range (`from`, `until`: RFC 3339 or milliseconds since the epoch), `action`, `token`,
/// `result` and `alias_ref`, `limit` (1 to 500, default 100) a page; `next` in the answer is the
/// `cursor` of the page after (a page may hold fewer events than `limit`, even none, and still
/// have one: a page reads at most ``AuditSearch/scanLimit`` events; null when nothing is left). An unknown parameter, or one given twice, is refused: a typo must
/// not widen a search into "everything". Without `from`, a search covers the ``defaultWindowDays``
/// before `until` (or now): only the time and alias indexes serve a search, and the vault's
/// thread must not scan a year of events for one token.
struct AdminAuditHandler {
    let vault: Vault
    /// The search is audited too (`audit_read`: its filters, never its answer).
    var outcome: Outcome? = nil

    static let parameters: Set<String> = ["from", "until", "action", "token", "result", "alias_ref", "cursor", "limit"]
    static let maxLimit = 500
    static let defaultWindowDays: Int64 = 31

    func search(_ request: HTTPRequest) throws(CloakError) -> Reply {
        let query = try Self.parse(request.query, now: VaultAuditing.nowMilliseconds())
        let outcome = self.outcome
        var facts: [(String, String)] = []
        if let action = query.action { facts.append(("action", action)) }
        if let token = query.tokenID { facts.append(("token", token)) }
        if let result = query.result { facts.append(("result", result)) }
        if let reference = query.aliasReference { facts.append(("alias_ref", reference)) }
        return .later { [vault, facts] finish in
            vault.auditEvents(
                AuditQuery(
                    from: query.from, until: query.until, action: query.action, tokenID: query.tokenID,
                    result: query.result, aliasReference: query.aliasReference, cursor: query.cursor,
                    limit: query.limit)
            ) { result in
                switch result {
                case let .success(page):
                    outcome?.alias(nil, .ok, facts: facts + [("count", String(page.events.count))])
                    let next = page.next.map(Self.cursorText)
                    let body: JSONValue = .object([
                        (key: "data", value: .array(page.events.map(Self.document))),
                        (key: "next", value: next.map(JSONValue.string) ?? .null),
                    ])
                    finish(.json(200, JSONWriter.encode(body), headers: HTTPResponse.noStoreHeaders))
                case let .failure(error):
                    finish(.error(error.cloakError { _ in "audit" }))
                }
            }
        }
    }

    /// An event as the API shows it: the audit line's fields, its time in RFC 3339 (UTC,
    /// milliseconds) and its place in its chain.
    static func document(_ event: AuditEvent) -> JSONValue {
        let d = event.draft
        return .object([
            (key: "at", value: .string(timestamp(d.at))),
            (key: "action", value: .string(d.action.text)),
            (key: "token_id", value: .string(d.tokenID)),
            (key: "client", value: .string(d.client)),
            (key: "alias_ref", value: d.aliasReference.map(JSONValue.string) ?? .null),
            (key: "result", value: .string(d.result.text)),
            (key: "facts", value: .object(d.facts.map { (key: $0.key, value: .string($0.value)) })),
            (key: "chain", value: .string(event.chain)),
            (key: "seq", value: .int(Int(event.seq))),
        ])
    }

    /// As the log lines write theirs (``UTCTimestamp``), not a formatter made per event.
    static func timestamp(_ milliseconds: Int64) -> String {
        UTCTimestamp.string(seconds: Int(milliseconds / 1000), milliseconds: Int(milliseconds % 1000))
    }

    /// The query, checked whole before the store is asked anything.
    static func parse(_ query: String?, now: Int64) throws(CloakError) -> AuditQuery {
        var out = AuditQuery(limit: 100)
        for (name, value) in try StrictQuery.pairs(query, known: parameters) {
            switch name {
            case "from": out.from = try time(value, name)
            case "until": out.until = try time(value, name)
            case "action": out.action = value
            case "token": out.tokenID = value
            case "result": out.result = value
            case "alias_ref":
                guard value.hasPrefix("ar_") else { throw .malformed("alias_ref is an alias's keyed reference (ar_…)") }
                out.aliasReference = value
            case "cursor": out.cursor = try cursor(value)
            default:
                guard let limit = Int(value), (1...maxLimit).contains(limit) else {
                    throw .malformed("limit must be 1 to \(maxLimit)")
                }
                out.limit = limit
            }
        }
        if let from = out.from, let until = out.until, from >= until { throw .malformed("from must be before until") }
        if out.from == nil { out.from = max(0, (out.until ?? now) - defaultWindowDays * 86_400_000) }
        return out
    }

    /// RFC 3339 (`2026-11-26T10:00:00Z`, fractions allowed) or milliseconds since the epoch.
    static func time(_ text: String, _ name: String) throws(CloakError) -> Int64 {
        if let milliseconds = Int64(text), (0...maxTime).contains(milliseconds) { return milliseconds }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        guard let date = formatter.date(from: text) ?? plain.date(from: text),
            case let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down),
            milliseconds >= 0, milliseconds <= Double(maxTime)
        else {
            throw .malformed(
                "\(name) must be an RFC 3339 time (2026-11-26T10:00:00Z) or milliseconds since 1970, up to the year 9999"
            )
        }
        return Int64(milliseconds)
    }

    /// The last millisecond of the year 9999: no time or cursor past it is taken.
    static let maxTime: Int64 = 253_402_300_799_999

    /// A cursor is `at.seq.chain`, base64url: opaque to clients, checked here.
    static func cursorText(_ cursor: AuditQuery.Cursor) -> String {
        RevealSession.base64url(Array("\(cursor.at).\(cursor.seq).\(cursor.chain)".utf8))
    }

    static func cursor(_ text: String) throws(CloakError) -> AuditQuery.Cursor {
        guard let bytes = RevealSession.decodeBase64url(Substring(text)),
            let plain = String(validating: bytes, as: UTF8.self)
        else {
            throw .malformed("cursor is not one this server gave")
        }
        let parts = plain.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let at = Int64(parts[0]), (0...maxTime + 1).contains(at), let seq = Int64(parts[1])
        else {
            throw .malformed("cursor is not one this server gave")
        }
        return AuditQuery.Cursor(at: at, chain: String(parts[2]), seq: seq)
    }
}
