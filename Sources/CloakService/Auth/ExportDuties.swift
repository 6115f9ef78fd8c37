/// The two-person rule of export jobs (issue 60): one person asks for an export, another
/// approves it. Every token is held to it, wherever it is kept: `check-config` refuses a YAML
/// token that breaks it, and `cloak tokens create` and `POST /admin/tokens` refuse to make one.
///
/// A person is a name the operator gives (`auth.tokens[].person`, `cloak tokens create
/// --person`); a token minted through `/admin/tokens` is its minter's person, never one it
/// names, so a person cannot mint a second person to approve its own export.
package enum ExportDuties {
    /// Why a token holding `scopes`, of `person`, may not exist; nil when it may.
    package static func violation(scopes: Set<Scope>, person: String?) -> String? {
        if scopes.contains(.jobsExport) && scopes.contains(.jobsApprove) {
            return
                "no token holds both jobs:export and jobs:approve: one person asks for an export, another approves it"
        }
        if scopes.contains(.jobsExport) && !scopes.contains(.aliasesReveal) {
            return "jobs:export is granted only beside aliases:reveal: an export reveals every value it selects"
        }
        if scopes.contains(.jobsExport) || scopes.contains(.jobsApprove), person == nil {
            return "a token holding jobs:export or jobs:approve names its person: approvals are judged by person"
        }
        return nil
    }

    /// A person's name: 1 to 64 of letters, digits and `. _ - @ +` (an e-mail address fits).
    package static func isValidPerson(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || [0x2E, 0x5F, 0x2D, 0x40, 0x2B].contains($0)
            }
    }
}
