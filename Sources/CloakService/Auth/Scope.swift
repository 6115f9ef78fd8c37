/// What a token may do, one value per permission, spelled in this file only (issue 58; as
/// swift-certificates spells each `ExtendedKeyUsage` once as a static member). Tokens hold a
/// `Set<Scope>`; endpoints, steps and handlers name scopes as `.aliasesReveal`, never as text.
///
/// A scope read from configuration, the CLI or the admin API is ``init(parsing:)``: one of
/// ``known``, or `egress:<route id>` for one egress route.
package struct Scope: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The scope as configured and as tokens list it (`aliases:create`).
    package let text: String

    private init(_ text: String) { self.text = text }

    package static let aliasesCreate = Scope("aliases:create")
    package static let aliasesReveal = Scope("aliases:reveal")
    package static let aliasesLookup = Scope("aliases:lookup")
    package static let aliasesUpdate = Scope("aliases:update")
    package static let aliasesDelete = Scope("aliases:delete")
    package static let filesReveal = Scope("files:reveal")
    package static let binsRead = Scope("bins:read")
    package static let tokensAdmin = Scope("tokens:admin")
    /// The audit events (`GET /admin/audit`, issue 59).
    package static let auditRead = Scope("audit:read")
    /// The route inspector (`POST /admin/routes/{id}/test`, issue 59).
    package static let routesTest = Scope("routes:test")
    /// The BIN table's status, history and rollback over the API and the console (issue 59).
    package static let binsAdmin = Scope("bins:admin")
    /// The key ring's versions and what each still seals, read-only (issue 59).
    package static let keysRead = Scope("keys:read")
    /// Import jobs: start one, follow it, read its mapping and advice (issue 60).
    package static let jobsImport = Scope("jobs:import")
    /// Export jobs: ask for one, follow it, download the encrypted file once another person
    /// approved it (issue 60). Granted only beside ``aliasesReveal`` and never beside
    /// ``jobsApprove`` (``ExportDuties``).
    package static let jobsExport = Scope("jobs:export")
    /// Approving another person's export job, after reading its selection, row count and
    /// recipient (issue 60).
    package static let jobsApprove = Scope("jobs:approve")
    /// Every job's state, progress and refusals by reason, read-only: the console's Jobs page
    /// (issue 76). Never a mapping, advice or export file: those stay with the job's owner.
    package static let jobsRead = Scope("jobs:read")
    /// Every egress route's scope at once.
    package static let egressAll = Scope("egress:*")

    /// The scope of one egress route.
    package static func egress(_ routeID: String) -> Scope { Scope(egressPrefix + routeID) }

    private static let egressPrefix = "egress:"

    /// Every fixed scope (without the per-route `egress:<id>`).
    package static let known: [Scope] = [
        .aliasesCreate, .aliasesReveal, .aliasesLookup, .aliasesUpdate, .aliasesDelete, .filesReveal, .binsRead,
        .egressAll, .tokensAdmin, .auditRead, .routesTest, .binsAdmin, .keysRead, .jobsImport,
        .jobsExport, .jobsApprove, .jobsRead,
    ]

    /// What a console session may carry (issue 59): administration and reading, never a scope
    /// that reveals, looks up or pays (`aliases:reveal`, `aliases:lookup`, `files:reveal`,
    /// `egress:*`), nor one that starts a job or downloads its files (`jobs:import`,
    /// `jobs:export`). A session holds these of its signed-in token's scopes; a token with none
    /// of them cannot sign in. `jobs:approve` approves another person's export on the Jobs page.
    package static let console: Set<Scope> = [
        .tokensAdmin, .auditRead, .routesTest, .binsAdmin, .keysRead, .jobsRead, .jobsApprove,
    ]

    /// `text` as a scope: a known one, or `egress:<route id>` (an id ``EgressSettings`` would
    /// accept); nil otherwise.
    package init?(parsing text: String) {
        if let known = Self.known.first(where: { $0.text == text }) {
            self = known
        } else if text.hasPrefix(Self.egressPrefix), EgressSettings.isRouteID(String(text.dropFirst(7))) {
            self.init(text)
        } else {
            return nil
        }
    }

    /// A scope kept in the store by any version of Cloak: taken as written (a scope this version
    /// does not know grants nothing here, but is not lost when the token is listed or migrated).
    package init(stored text: String) { self.init(text) }

    /// Whether this is one egress route's scope.
    package var isEgressRoute: Bool { text.hasPrefix(Self.egressPrefix) && self != .egressAll }

    package var description: String { text }

    package static func < (a: Scope, b: Scope) -> Bool { a.text < b.text }
}

extension Set<Scope> {
    /// The scopes as text, sorted (logs, listings, audit lines).
    package var texts: [String] { map(\.text).sorted() }
}
