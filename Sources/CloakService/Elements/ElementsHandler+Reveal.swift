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
    /// The vault as the token that minted a session uses it: a session's reveals pay that token's
    /// rate, and aliases not found count as its guesses (``VaultClient/revealGuessing(_:completion:)``).
    let vaultFor: @Sendable (Identity) -> VaultClient?
    let sessionKey: HMACKey
    let identity: Identity
    let client: String
    /// What the handler did, for the endpoint's audit lines.
    let outcome: Outcome?
    /// The tokens the node accepts now: a session dies with its minting token.
    let tokens: TokenDirectory
    var logger: Logger { elements.context.logger }

    /// `POST /elements/sessions` (scope `aliases:reveal`): `{"aliases": [...], "ttl_s": 300,
    /// "client"?, "audience"?: "web" | "native"}` → 201 `{"session", "expires_at"}`.
    func createSession(_ request: HTTPRequest, now: Int64) throws(CloakError) -> HTTPResponse {
        let tokenID = try identity.require(.aliasesReveal)
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed("the body must be a JSON object")
        }
        var aliases: [String]?
        var ttl = RevealSession.defaultTTL
        var boundTo: String?
        var audience = RevealSession.Audience.web
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
            case "audience":
                guard case let .string(text) = value, let named = RevealSession.Audience(rawValue: text) else {
                    throw .malformed("\"audience\" must be \"web\" (Cloak's reveal frame) or \"native\" (an app)")
                }
                audience = named
            default:
                throw .malformed(
                    "unknown member \"\(Redaction.scrub(key, limit: 64))\"; expected aliases, ttl_s, client, audience")
            }
        }
        guard let aliases else { throw .malformed("the body has no \"aliases\"") }
        switch audience {
        case .web where !elements.settings.isEnabled:
            throw .malformed("web sessions need elements.allowed_origins; ask for \"audience\": \"native\"")
        case .native where !elements.settings.native:
            throw .malformed("native sessions need elements.native: true")
        default: break
        }
        let session = RevealSession(
            tokenID: tokenID, aliases: Array(Set(aliases)).sorted(), expiresAt: now + Int64(ttl),
            client: boundTo, audience: audience, tokenDigest: RevealSession.tokenDigest(identity.token?.sha256 ?? []))
        outcome?.alias(
            nil, .ok,
            facts: [
                ("aliases", String(session.aliases.count)), ("ttl_s", String(ttl)), ("audience", audience.rawValue),
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
        return try reveal(session: text, alias: alias, for: .web, request, now: now)
    }

    /// `POST /elements/v1/native/reveal` with `{"session": "…", "alias": "…"}`: the value, to an
    /// app (CloakCollect's `CloakReveal`), for a session minted with `"audience": "native"`. Only
    /// with `elements.native`, and only for a client that sends no `Origin`: a page's script
    /// always sends one, so a session a page got hold of reveals nothing here.
    func nativeReveal(_ request: HTTPRequest, now: Int64) throws(CloakError) -> Reply {
        guard elements.settings.native, request.header("Origin") == nil else { throw .notFound("no such endpoint") }
        guard case let .object(members) = try request.jsonBody() else {
            throw .malformed("the body must be {\"session\": \"…\", \"alias\": \"…\"}")
        }
        var session: String?
        var alias: String?
        for (key, value) in members {
            switch (key, value) {
            case ("session", .string(let text)) where session == nil: session = text
            case ("alias", .string(let text)) where alias == nil && VaultAPIHandler.isPlausibleAlias(text): alias = text
            default:
                throw .malformed(
                    "the body must be {\"session\": \"…\", \"alias\": \"…\"} (an alias of at most 256 bytes)")
            }
        }
        guard let session, let alias else {
            throw .malformed("the body must be {\"session\": \"…\", \"alias\": \"…\"}")
        }
        return try reveal(session: session, alias: alias, for: .native, request, now: now)
    }

    /// Both paths: the session opens, is for this path's audience, its token may still reveal,
    /// it is bound to this client (when bound) and names the alias; then the value.
    private func reveal(
        session text: String, alias: String, for audience: RevealSession.Audience, _ request: HTTPRequest, now: Int64
    ) throws(CloakError) -> Reply {
        let session: RevealSession
        do { session = try RevealSession.open(text, key: sessionKey, now: now) } catch {
            // `extraInfo.reason` tells the reveal frame (and its page, or the app) which refusal it was.
            throw error == .expired
                ? CloakError(.forbidden, "the session has expired", extraInfo: [("reason", .string("expired"))])
                : CloakError(
                    .forbidden, "the session is not valid", extraInfo: [("reason", .string("invalid_session"))])
        }
        let via = audience == .web ? "elements" : "native"
        guard session.audience == audience else {
            audit(session.tokenID, alias, .wrongAudience, via: via)
            throw CloakError(
                .forbidden,
                audience == .web
                    ? "the session was minted for an app (audience native)"
                    : "the session was minted for Cloak's reveal frame (audience web)",
                extraInfo: [("reason", .string("wrong_audience"))])
        }
        // A session is worth no more than the token that minted it: a token removed from the
        // configuration, given another secret, or no longer holding aliases:reveal, ends its
        // sessions at once.
        guard let minter = mintingToken(session) else {
            audit(session.tokenID, alias, .tokenRevoked, via: via)
            throw CloakError(
                .forbidden, "the token that minted this session may no longer reveal",
                extraInfo: [("reason", .string("token_revoked"))])
        }
        if let bound = session.client, IPAddress(request.remoteAddress)?.description != bound {
            audit(session.tokenID, alias, .otherClient, via: via)
            throw CloakError(
                .forbidden, "the session is bound to another client address",
                extraInfo: [("reason", .string("other_client"))])
        }
        guard session.aliases.contains(alias) else {
            audit(session.tokenID, alias, .notInSession, via: via)
            throw CloakError(
                .forbidden, "the session does not name this alias", extraInfo: [("reason", .string("not_in_session"))])
        }
        let vault = vaultFor(Identity(token: minter, rejected: false)) ?? self.vault
        return .later { finish in
            vault.revealGuessing([alias]) { result in
                switch result {
                case let .success(found):
                    guard let record = found[alias] else {
                        audit(session.tokenID, alias, .notFound, via: via)
                        finish(.error(.notFound("no such alias")))
                        return
                    }
                    audit(session.tokenID, alias, .ok, via: via)
                    finish(
                        .json(
                            200, .object([("value", .string(record.value))]),
                            headers: [
                                ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                            ]))
                case let .failure(error):
                    audit(session.tokenID, alias, .error, via: via)
                    finish(.error(error.cloakError { _ in "alias" }))
                }
            }
        }
    }

    /// The token that minted `session`, when it is still configured with the same secret,
    /// holds `aliases:reveal` and names no access policy (issue 77: a session is judged when
    /// used, and Elements' reveals do not apply policies yet).
    func mintingToken(_ session: RevealSession) -> ServiceConfiguration.AccessToken? {
        tokens.token(id: session.tokenID).flatMap {
            $0.scopes.contains(.aliasesReveal) && !$0.access.isRestricted
                && constantTimeEquals(RevealSession.tokenDigest($0.sha256), session.tokenDigest) ? $0 : nil
        }
    }

    /// Notes one reveal through a session for the endpoint's audit line: the token that minted
    /// it, the alias's keyed reference (never the alias), the outcome.
    private func audit(_ tokenID: String, _ alias: String, _ result: AuditResult, via: String) {
        outcome?.alias(vault.vault.auditReference(alias), result, tokenID: tokenID, facts: [("via", via)])
    }
}
