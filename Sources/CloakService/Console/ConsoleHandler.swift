import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// The console's own endpoints (docs/console.md): its page and files, and its sessions. Every
/// other thing the page shows comes from the admin API, under `/console/api/` on this listener
/// (``ConsoleEndpoints``).
struct ConsoleHandler: Sendable {
    let sessions: ConsoleSessions
    let authenticator: Authenticator
    let settings: ConsoleSettings
    let tls: Bool

    /// `GET /console/` and `GET /console/{asset}`.
    func asset(_ request: HTTPRequest, name: String?) throws(CloakError) -> HTTPResponse {
        let asset: ElementsAssets.Asset
        if let name {
            guard let found = ConsoleAssets.byName[name] else { throw .notFound("no such console file") }
            asset = found
        } else {
            asset = ConsoleAssets.page
        }
        return ElementsHandler.conditional(
            request, etag: asset.etag, contentType: asset.contentType, body: asset.bytes,
            headers: [("ETag", asset.etag), ("Cache-Control", "no-cache")])
    }

    /// `POST /console/session` `{"token": "<API token>"}` → 201 with the session (and its
    /// cookie): the token is looked up, never kept; the session carries its console scopes.
    /// 401 for a token that is not valid (counted with every refused credential); 403 for one
    /// that holds none of the console's scopes.
    func signIn(_ context: RequestContext) throws(CloakError) -> Reply {
        let request = context.request
        try request.requireJSONContentType()
        guard request.body.count <= 4096, case let .object(members) = try request.jsonBody(), members.count == 1,
            members[0].key == "token", let secret = members[0].value.stringValue, !secret.isEmpty
        else { throw .malformed(#"the body must be {"token": "<an API token>"}"#) }
        guard let token = authenticator.token(presenting: Array(secret.utf8)) else {
            throw CloakError(.invalidAccessToken, "the token is not valid")
        }
        guard !token.scopes.isDisjoint(with: Scope.console) else {
            context.outcome?.alias(nil, .refused, tokenID: token.id, facts: [("reason", "no console scope")])
            throw CloakError(
                .forbidden,
                "the token \(token.id) holds none of the console's scopes: "
                    + Scope.console.texts.joined(separator: ", "))
        }
        // The console's pages do not judge access policies yet (issue 77): a token held to
        // them is refused here rather than given a session every page then refuses.
        guard !token.access.isRestricted else {
            context.outcome?.alias(nil, .refused, tokenID: token.id, facts: [("reason", "access policies")])
            throw CloakError(
                .forbidden, "the token \(token.id) is held to access policies, which the console does not apply yet")
        }
        let (cookie, session) = sessions.signIn(token)
        context.outcome?.alias(
            nil, .ok, tokenID: token.id, facts: [("scopes", session.scopes.texts.joined(separator: ","))])
        return .now(
            .json(
                201, describe(session),
                headers: [
                    ("Set-Cookie", ConsoleCookie.setting(cookie, tls: tls, maxAge: settings.sessionMaxSeconds)),
                    ("Cache-Control", "no-store"),
                ]))
    }

    /// `GET /console/session`: the signed-in session (its CSRF token for the page's changes), or
    /// `{"signed_in": false}`.
    func current(_ context: RequestContext) -> HTTPResponse {
        guard let session = context.console?.session else {
            return .json(200, .object([("signed_in", .bool(false))]), headers: [("Cache-Control", "no-store")])
        }
        return .json(200, describe(session, context), headers: [("Cache-Control", "no-store")])
    }

    /// `DELETE /console/session`: signs out (204, the cookie cleared).
    func signOut(_ context: RequestContext) -> HTTPResponse {
        if let cookie = context.console?.cookie { sessions.end(cookie) }
        context.outcome?.alias(nil, .ok)
        return HTTPResponse(
            status: 204, headers: [("Set-Cookie", ConsoleCookie.clearing(tls: tls)), ("Cache-Control", "no-store")])
    }

    /// The session as the page reads it; `grants` what a token it creates may hold now.
    func describe(_ session: ConsoleSessions.Session, _ context: RequestContext? = nil) -> JSONValue {
        .object([
            ("signed_in", .bool(true)), ("token_id", .string(session.tokenID)),
            ("scopes", .strings(session.scopes.texts)),
            ("grants", .strings((context?.identity.grantable ?? session.held).texts)), ("csrf", .string(session.csrf)),
            ("idle_s", .int(settings.sessionIdleSeconds)), ("ends_in_s", .int(sessions.remaining(session))),
            ("elements_origin", settings.elementsOrigin.map { .string($0) } ?? .null),
        ])
    }
}
