import CloakCore
import CloakHTTP
import CloakVault
import Foundation

/// The API listener's endpoints: each one declaration (where, who, how counted, what audited)
/// and its handler. Adding an endpoint is adding a line here; its refusal of callers without
/// its access is then tested by being declared (`EndpointAccessTests`).
extension Endpoint {
    static let api: [Endpoint] = [
        Endpoint("healthz", .GET, "/healthz", access: .open, rate: .exempt) { _, _ throws(CloakError) in
            .now(HealthHandler.healthy)
        },
        Endpoint("readyz", .GET, "/readyz", access: .open, rate: .exempt) { s, c throws(CloakError) in s.readiness(c) },
        Endpoint("metrics", .GET, "/metrics", access: .open, rate: .caller) { s, _ throws(CloakError) in
            .now(s.metricsExposition())
        },

        // Forms: validate, tokenize, send.
        Endpoint("validate", .POST, "/forms/{form}/validate", access: .open, rate: .creator) {
            s, c throws(CloakError) in
            try ValidateHandler(context: s.context, bins: s.binRefresh?.current?.table).reply(to: c)
        },
        Endpoint(
            "form-tokens", .POST, "/forms/{form}/tokens", access: .tokenize, rate: .creator, audit: .fileUpload,
            body: .formUpload
        ) {
            s, c throws(CloakError) in
            try s.forms(c).handle(c.request, form: c.parameter("form"), requiresToken: false, answer: .flatResult)
        },
        Endpoint(
            "form-aliases", .POST, "/forms/{form}/aliases", access: .scope(.aliasesCreate), rate: .caller,
            audit: .fileUpload, body: .formUpload
        ) {
            s, c throws(CloakError) in
            try s.forms(c).handle(c.request, form: c.parameter("form"), requiresToken: true, answer: .flatResult)
        },
        Endpoint(
            "form-send", .POST, "/forms/{form}/send", access: .tokenize, rate: .creator, audit: .fileUpload,
            body: .formUpload
        ) {
            s, c throws(CloakError) in
            try s.forms(c).handle(c.request, form: c.parameter("form"), requiresToken: false, answer: .mappedBody)
        },

        // The Vault API.
        Endpoint("create-tokens", .POST, "/tokens", access: .tokenize, rate: .creator) { s, c throws(CloakError) in
            try s.vaultAPI(c).create(c.request, requiresToken: false)
        },
        Endpoint(
            "create-aliases", .POST, "/aliases", access: .scope(.aliasesCreate), rate: .caller, audit: .create
        ) {
            s, c throws(CloakError) in
            try s.vaultAPI(c).create(c.request, requiresToken: true)
        },
        Endpoint(
            "reveal-many", .GET, "/aliases", access: .scope(.aliasesReveal), rate: .caller, audit: .reveal,
            judgesPolicies: true
        ) { s, c throws(CloakError) in try s.vaultAPI(c).revealMany(c.request) },
        Endpoint("keep", .POST, "/aliases/keep", access: .scope(.aliasesCreate), rate: .caller, audit: .keep) {
            s, c throws(CloakError) in try s.vaultAPI(c).keep(c.request)
        },
        Endpoint(
            "lookup", .POST, "/aliases/lookup", access: .scope(.aliasesLookup), rate: .caller, audit: .lookup
        ) { s, c throws(CloakError) in try s.vaultAPI(c).lookup(c.request) },
        // aliases:reveal: the record; bins:read alone: its card attributes, never its value.
        Endpoint(
            "reveal", .GET, "/aliases/{alias}", access: .anyScope([.aliasesReveal, .binsRead]), rate: .caller,
            audit: .reveal, judgesPolicies: true
        ) { s, c throws(CloakError) in try s.vaultAPI(c).reveal(c.request, alias: c.parameter("alias")) },
        Endpoint(
            "update", .PUT, "/aliases/{alias}", access: .scope(.aliasesUpdate), rate: .caller, audit: .update
        ) { s, c throws(CloakError) in try s.vaultAPI(c).update(c.request, alias: c.parameter("alias")) },
        Endpoint(
            "delete", .DELETE, "/aliases/{alias}", access: .scope(.aliasesDelete), rate: .caller, audit: .delete
        ) { s, c throws(CloakError) in try s.vaultAPI(c).delete(c.request, alias: c.parameter("alias")) },

        // Files (issue 47): the content of a file alias, as an attachment.
        Endpoint(
            "file-reveal", .GET, "/files/{alias}", access: .scope(.filesReveal), rate: .caller, audit: .fileReveal
        ) { s, c throws(CloakError) in
            try s.fileReveal(c).reveal(alias: c.parameter("alias"))
        },

        // Card attributes from the BIN table (issue 48).
        Endpoint("bins", .GET, "/bins/{digits}", access: .scope(.binsRead), rate: .caller) {
            s, c throws(CloakError) in try s.bins(c).lookup(c.parameter("digits"))
        },
        Endpoint(
            "card-attributes", .POST, "/cards/attributes", access: .scope(.binsRead), rate: .caller,
            audit: .cardAttributes
        ) {
            s, c throws(CloakError) in try s.bins(c).attributes(c.request)
        },

        // Cloak Elements.
        Endpoint("elements-schema", .GET, "/elements/v1/forms/{form}", access: .open, rate: .caller) {
            s, c throws(CloakError) in
            .now(try ElementsHandler(context: s.context).schema(c.request, form: c.parameter("form")))
        },
        Endpoint("elements-bins", .GET, "/elements/v1/bins/{bin}", access: .open, rate: .caller) {
            s, c throws(CloakError) in
            .now(
                try ElementsHandler(context: s.context).bins(
                    c.request, bin: c.parameter("bin"), table: s.binRefresh?.current?.table))
        },
        Endpoint(
            "elements-reveal", .GET, "/elements/v1/reveal", access: .session, rate: .caller, audit: .reveal
        ) { s, c throws(CloakError) in
            try s.elementsReveal(c).reveal(c.request, now: Int64(Date().timeIntervalSince1970))
        },
        Endpoint("elements-asset", .GET, "/elements/v1/{asset}", access: .open, rate: .exempt) {
            s, c throws(CloakError) in
            .now(try ElementsHandler(context: s.context).asset(c.request, name: c.parameter("asset")))
        },
        Endpoint(
            "elements-session", .POST, "/elements/sessions", access: .scope(.aliasesReveal), rate: .caller,
            audit: .elementsSession
        ) { s, c throws(CloakError) in
            .now(try s.elementsReveal(c).createSession(c.request, now: Int64(Date().timeIntervalSince1970)))
        },
        Endpoint(
            "elements-native-reveal", .POST, "/elements/v1/native/reveal", access: .session, rate: .caller,
            audit: .reveal
        ) { s, c throws(CloakError) in
            try s.elementsReveal(c).nativeReveal(c.request, now: Int64(Date().timeIntervalSince1970))
        },

        // API credentials at run time.
        Endpoint(
            "tokens-create", .POST, "/admin/tokens", access: .scope(.tokensAdmin), rate: .caller,
            audit: .tokensCreate
        ) { s, c throws(CloakError) in try s.adminTokens(c).create(c.request) },
        Endpoint(
            "audit-search", .GET, "/admin/audit", access: .scope(.auditRead), rate: .caller, audit: .auditRead
        ) {
            s, c throws(CloakError) in
            guard let vault = s.vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
            return try AdminAuditHandler(vault: vault, outcome: c.outcome).search(c.request)
        },
        Endpoint(
            "routes-test", .POST, "/admin/routes/{id}/test", access: .scope(.routesTest), rate: .caller,
            audit: .routesTest
        ) { s, c throws(CloakError) in
            try AdminRoutesHandler(
                routes: s.configuration.routes + s.configuration.egress.routes,
                maxBatch: s.configuration.vault.maxBatch, outcome: c.outcome
            ).test(c.request, id: c.parameter("id"))
        },
        // What the console shows (issue 59), each also an API endpoint.
        Endpoint("overview", .GET, "/admin/overview", access: .anyScope(consoleScopes), rate: .caller) {
            s, _ throws(CloakError) in AdminNodeHandler(service: s, now: Int64(Date().timeIntervalSince1970)).overview()
        },
        Endpoint("files-summary", .GET, "/admin/files", access: .anyScope(consoleScopes), rate: .caller) {
            s, _ throws(CloakError) in AdminNodeHandler(service: s, now: Int64(Date().timeIntervalSince1970)).files()
        },
        Endpoint("forms-list", .GET, "/admin/forms", access: .anyScope(consoleScopes), rate: .caller) {
            s, _ throws(CloakError) in
            AdminInventoryHandler(configuration: s.configuration, today: s.context.today()).forms()
        },
        Endpoint("routes-list", .GET, "/admin/routes", access: .scope(.routesTest), rate: .caller) {
            s, _ throws(CloakError) in
            AdminInventoryHandler(configuration: s.configuration, today: s.context.today()).routes()
        },
        Endpoint("bins-status", .GET, "/admin/bins", access: .scope(.binsAdmin), rate: .caller) {
            s, c throws(CloakError) in try s.adminBins(c).status()
        },
        Endpoint(
            "bins-rollback", .POST, "/admin/bins/rollback", access: .scope(.binsAdmin), rate: .caller,
            audit: .binsRollback
        ) { s, c throws(CloakError) in try s.adminBins(c).rollback(c.request) },
        Endpoint("keys-status", .GET, "/admin/keys", access: .scope(.keysRead), rate: .caller) {
            s, c throws(CloakError) in
            guard let vault = s.vault else { throw CloakError(.vaultUnavailable, "this server runs without a vault") }
            return AdminKeysHandler(vault: vault, counts: s.state.keyCounts).status()
        },
        Endpoint("tokens-list", .GET, "/admin/tokens", access: .scope(.tokensAdmin), rate: .caller) {
            s, c throws(CloakError) in try s.adminTokens(c).list(c.request)
        },
        Endpoint(
            "tokens-revoke", .DELETE, "/admin/tokens/{id}", access: .scope(.tokensAdmin), rate: .caller,
            audit: .tokensRevoke
        ) { s, c throws(CloakError) in try s.adminTokens(c).revoke(id: c.parameter("id")) },

        // Bulk jobs (issue 60): a token sees the jobs it started.
        Endpoint(
            "jobs-import", .POST, "/admin/jobs/imports", access: .scope(.jobsImport), rate: .caller,
            audit: .jobImport, body: .jobInput
        ) { s, c throws(CloakError) in try s.adminJobs(c).start(c.request) },
        Endpoint(
            "jobs-export", .POST, "/admin/jobs/exports", access: .scope(.jobsExport), rate: .caller,
            audit: .jobExport
        ) { s, c throws(CloakError) in try s.adminJobs(c).export(c.request) },
        Endpoint("jobs-list", .GET, "/admin/jobs", access: .anyScope(jobScopes), rate: .caller) {
            s, c throws(CloakError) in try s.adminJobs(c).list(c.request)
        },
        Endpoint("jobs-status", .GET, "/admin/jobs/{id}", access: .anyScope(jobScopes), rate: .caller) {
            s, c throws(CloakError) in try s.adminJobs(c).status(c.parameter("id"))
        },
        Endpoint(
            "jobs-refusals", .GET, "/admin/jobs/{id}/refusals", access: .anyScope([.jobsImport, .jobsRead]),
            rate: .caller
        ) { s, c throws(CloakError) in try s.adminJobs(c).refusals(c.parameter("id")) },
        Endpoint(
            "jobs-cancel", .POST, "/admin/jobs/{id}/cancel", access: .anyScope(ownJobScopes), rate: .caller,
            audit: .jobCancel
        ) { s, c throws(CloakError) in try s.adminJobs(c).change(c.parameter("id"), to: .cancelled) },
        Endpoint(
            "jobs-resume", .POST, "/admin/jobs/{id}/resume", access: .anyScope(ownJobScopes), rate: .caller,
            audit: .jobResume
        ) { s, c throws(CloakError) in try s.adminJobs(c).change(c.parameter("id"), to: .queued) },
        Endpoint(
            "jobs-approve", .POST, "/admin/jobs/{id}/approve", access: .scope(.jobsApprove), rate: .caller,
            audit: .jobApprove
        ) { s, c throws(CloakError) in try s.adminJobs(c).approve(c.parameter("id"), c.request) },
        Endpoint(
            "jobs-export-file", .GET, "/admin/jobs/{id}/export", access: .scope(.jobsExport), rate: .caller,
            audit: .jobDownload
        ) { s, c throws(CloakError) in try s.adminJobs(c).output(c.parameter("id"), .export) },
        Endpoint(
            "jobs-mapping", .GET, "/admin/jobs/{id}/mapping", access: .scope(.jobsImport), rate: .caller,
            audit: .jobDownload
        ) { s, c throws(CloakError) in try s.adminJobs(c).output(c.parameter("id"), .mapping) },
        Endpoint(
            "jobs-advice", .GET, "/admin/jobs/{id}/advice", access: .scope(.jobsImport), rate: .caller,
            audit: .jobDownload
        ) { s, c throws(CloakError) in try s.adminJobs(c).output(c.parameter("id"), .advice) },

        // The doors.
        Endpoint("proxy", proxied, ["/proxy/{path...}"], access: .tokenize, rate: .creatorOrRevealer) {
            s, c throws(CloakError) in
            var handler = ProxyHandler(
                context: s.context, vault: s.vaultClient(c.request, c.identity, trace: c.trace),
                routes: s.configuration.routes,
                identity: c.identity, authenticator: s.auth, trace: c.trace)
            handler.belowDiskReserve = s.state.diskReserve.isBelow(s.configuration.limits.diskReserveMiB)
            handler.diskReserveMiB = s.configuration.limits.diskReserveMiB
            return try handler.reply(to: c)
        },
        Endpoint(
            "egress", proxied, ["/egress/{route}", "/egress/{route}/{path...}"], access: .egressRoute, rate: .caller,
            credentials: .proxyAuthorization
        ) { s, c throws(CloakError) in
            s.egressHandler(c.identity).transformDoor(
                c.request, routeID: c.parameter("route"), trace: c.trace, trustedContext: c.trustsCallerContext)
        },
    ]

    /// Who may list and follow jobs (each sees its own; an approver every export).
    static let jobScopes: [Scope] = [.jobsImport, .jobsExport, .jobsApprove, .jobsRead]
    /// Who may start jobs, and so cancel and resume its own.
    static let ownJobScopes: [Scope] = [.jobsImport, .jobsExport]

    /// Any of these admits a caller to the console's shared pages (overview, forms, files).
    static let consoleScopes = Scope.console.sorted()

    /// The methods a proxied path takes: all but `OPTIONS` (CORS), `CONNECT` and `TRACE`.
    static let proxied = HTTPMethod.allCases.filter { $0 != .OPTIONS && $0 != .CONNECT && $0 != .TRACE }

    /// The router of ``api``: every method and template of every declaration.
    static let apiRouter = router(api)

    /// A router of `endpoints`: every method and template of every declaration.
    static func router(_ endpoints: [Endpoint]) -> Router<Endpoint> {
        var router = Router<Endpoint>()
        for endpoint in endpoints {
            for template in endpoint.templates {
                for method in endpoint.methods { router.add(method, template, endpoint) }
            }
        }
        return router
    }
}
