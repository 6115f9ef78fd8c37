import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation
import Logging

/// Cloak Elements' "show": a backend mints a session for some aliases, the page hands it to
/// Cloak's reveal frame, and only that frame gets the values (docs/elements.md).
struct ElementsRevealHandler: Sendable {
    let elements: ElementsHandler
    let vault: VaultClient
    let sessionKey: HMACKey
    let identity: Identity
    let client: String
    var logger: Logger { elements.context.logger }

    /// `POST /elements/sessions` (scope `aliases:reveal`): `{"aliases": [...], "ttl_s": 300}` →
    /// 201 `{"session", "expires_at"}`.
    func createSession(_ request: HTTPRequest, now: Int64) throws(CloakError) -> HTTPResponse {
        try elements.requireEnabled()
        let tokenID = try identity.require("aliases:reveal")
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed("the body must be a JSON object")
        }
        var aliases: [String]?
        var ttl = RevealSession.defaultTTL
        var boundTo: String?
        for (key, value) in members {
            switch key {
            case "aliases":
                guard case let .array(items) = value, !items.isEmpty, items.count <= RevealSession.maxAliases else {
                    throw .malformed("\"aliases\" must be an array of 1 to \(RevealSession.maxAliases) aliases")
                }
                let strings = items.compactMap(\.stringValue)
                guard strings.count == items.count, strings.allSatisfy(VaultAPIHandler.isPlausibleAlias) else {
                    throw .malformed("\"aliases\" must hold aliases (printable ASCII strings of at most 256 bytes)")
                }
                aliases = strings
            case "ttl_s":
                guard case let .number(text) = value, let seconds = Int(text),
                    (1...RevealSession.maxTTL).contains(seconds)
                else {
                    throw .malformed("\"ttl_s\" must be a whole number of seconds from 1 to \(RevealSession.maxTTL)")
                }
                ttl = seconds
            case "client":
                guard case let .string(address) = value, let parsed = IPAddress(address) else {
                    throw .malformed("\"client\" must be the end user's IP address as Cloak sees it (e.g. 203.0.113.7)")
                }
                boundTo = parsed.description
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected aliases, ttl_s, client")
            }
        }
        guard let aliases else { throw .malformed("the body has no \"aliases\"") }
        let session = RevealSession(
            tokenID: tokenID, aliases: Array(Set(aliases)).sorted(), expiresAt: now + Int64(ttl),
            client: boundTo)
        logger.info(
            "audit",
            metadata: [
                "action": "elements_session", "token_id": .string(tokenID), "client": .string(client),
                "aliases": .string(String(session.aliases.count)), "ttl_s": .string(String(ttl)), "result": "ok",
            ])
        return .json(
            201,
            .object([
                ("session", .string(session.sealed(with: sessionKey))),
                ("expires_at", .string(RevealedRecord.iso8601(session.expiresAt))),
            ]))
    }

    /// `GET /elements/v1/reveal` with `Cloak-Session` and `Cloak-Alias`: the value, to Cloak's
    /// reveal frame only. A browser sends `Sec-Fetch-Site: same-origin` only for a request a
    /// document of Cloak's own origin made, and no page can make it send that; other clients
    /// would need the session, which only the page and its backend hold.
    func reveal(_ request: HTTPRequest, now: Int64) throws(CloakError) -> Reply {
        try elements.requireEnabled()
        guard request.header("Sec-Fetch-Site") == "same-origin" else {
            throw CloakError(.forbidden, "reveals are answered only to Cloak's own reveal frame")
        }
        guard let text = request.header("Cloak-Session"), let alias = request.header("Cloak-Alias") else {
            throw .malformed("Cloak-Session and Cloak-Alias headers are required")
        }
        let session: RevealSession
        do { session = try RevealSession.open(text, key: sessionKey, now: now) } catch {
            // `extraInfo.reason` tells the reveal frame (and its page) which refusal it was.
            throw error == .expired
                ? CloakError(.forbidden, "the session has expired", extraInfo: [("reason", .string("expired"))])
                : CloakError(
                    .forbidden, "the session is not valid", extraInfo: [("reason", .string("invalid_session"))])
        }
        // A session is worth no more than the token that minted it: a token removed from the
        // configuration, or no longer holding aliases:reveal, ends its sessions at once.
        guard mintingTokenMayReveal(session.tokenID) else {
            audit(session.tokenID, alias, "token_revoked")
            throw CloakError(
                .forbidden, "the token that minted this session may no longer reveal",
                extraInfo: [("reason", .string("token_revoked"))])
        }
        if let bound = session.client, IPAddress(request.remoteAddress)?.description != bound {
            audit(session.tokenID, alias, "other_client")
            throw CloakError(
                .forbidden, "the session is bound to another client address",
                extraInfo: [("reason", .string("other_client"))])
        }
        guard session.aliases.contains(alias) else {
            audit(session.tokenID, alias, "not_in_session")
            throw CloakError(
                .forbidden, "the session does not name this alias", extraInfo: [("reason", .string("not_in_session"))])
        }
        return .later { finish in
            vault.reveal([alias]) { result in
                switch result {
                case let .success(found):
                    guard let record = found[alias] else {
                        audit(session.tokenID, alias, "not_found")
                        finish(.error(.notFound("no such alias")))
                        return
                    }
                    audit(session.tokenID, alias, "ok")
                    finish(
                        .json(
                            200, .object([("value", .string(record.value))]),
                            headers: [
                                ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                            ]))
                case let .failure(error):
                    audit(session.tokenID, alias, "error")
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// Whether the token `id` is still configured and holds `aliases:reveal`.
    func mintingTokenMayReveal(_ id: String) -> Bool {
        elements.context.configuration.auth.contains { $0.id == id && $0.scopes.contains("aliases:reveal") }
    }

    /// One audit line per reveal through a session: the token that minted it, the alias's keyed
    /// reference (never the alias), the outcome.
    private func audit(_ tokenID: String, _ alias: String, _ result: String) {
        logger.info(
            "audit",
            metadata: [
                "action": "reveal", "via": "elements", "token_id": .string(tokenID), "client": .string(client),
                "alias_ref": .string(vault.vault.auditReference(alias)), "result": .string(result),
            ])
    }
}

extension ElementsRevealHandler: RequestHandler {
    /// `POST /elements/reveal-sessions` (a backend) and `POST /elements/reveal` (the page).
    func reply(to c: RequestContext) throws(CloakError) -> Reply {
        let now = Int64(Date().timeIntervalSince1970)
        if c.endpoint == .elementsSession { return .now(try createSession(c.request, now: now)) }
        return try reveal(c.request, now: now)
    }
}
