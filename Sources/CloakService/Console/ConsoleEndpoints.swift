import CloakCore
import CloakHTTP
import CloakVault

/// The console listener's endpoints (`console.listen`): the page, its sessions, and the admin
/// API's endpoints the pages use, each the API's own declaration (handler, access, audit) under
/// `/console/api` (`/console/api/admin/tokens` is `/admin/tokens`). Nothing else of the API
/// answers here: no alias, reveal, lookup, file or egress endpoint.
enum ConsoleEndpoints {
    static let signIn = "console-sign-in"

    /// The API endpoints the console's pages call, by name.
    static let admin: Set<String> = [
        "overview", "files-summary", "forms-list", "routes-list", "routes-test", "bins-status", "bins-rollback",
        "keys-status", "audit-search", "tokens-create", "tokens-list", "tokens-revoke", "jobs-list", "jobs-status",
        "jobs-refusals", "jobs-approve",
    ]

    static let prefix = "/console/api"

    static let all: [Endpoint] = {
        var out: [Endpoint] = [
            Endpoint("console-page", [.GET], ["/console", "/console/"], access: .open, rate: .exempt) {
                s, c throws(CloakError) in .now(try s.console.asset(c.request, name: nil))
            },
            Endpoint("console-asset", .GET, "/console/{asset}", access: .open, rate: .exempt) {
                s, c throws(CloakError) in .now(try s.console.asset(c.request, name: c.parameter("asset")))
            },
            // Open: a signed-out page asks too, and is told so (not a refused credential).
            Endpoint("console-session", .GET, "/console/session", access: .open, rate: .caller) {
                s, c throws(CloakError) in .now(s.console.current(c))
            },
            Endpoint(signIn, .POST, "/console/session", access: .open, rate: .caller, audit: .consoleSignIn) {
                s, c throws(CloakError) in try s.console.signIn(c)
            },
            Endpoint(
                "console-sign-out", .DELETE, "/console/session", access: .anyScope(Endpoint.consoleScopes),
                rate: .caller, audit: .consoleSignOut
            ) { s, c throws(CloakError) in .now(s.console.signOut(c)) },
        ]
        for endpoint in Endpoint.api where admin.contains(endpoint.name) {
            out.append(
                Endpoint(
                    endpoint.name, endpoint.methods, endpoint.templates.map { prefix + $0 }, access: endpoint.access,
                    rate: endpoint.rate, audit: endpoint.audit, credentials: endpoint.credentials, body: endpoint.body,
                    handler: endpoint.handler))
        }
        return out
    }()

    static let router = Endpoint.router(all)
}
