import CloakService
import CloakTesting
import Foundation
import Testing

/// Scopes are one typed table (issue 58): parsed from text in one place, named as members
/// everywhere else.
struct ScopeTests {
    @Test(arguments: [
        ("aliases:create", true), ("aliases:reveal", true), ("egress:*", true), ("egress:psp", true),
        ("tokens:admin", true), ("bins:read", true), ("files:reveal", true),
        ("aliases:*", false), ("ALIASES:CREATE", false), ("egress:", false), ("egress:a b", false), ("", false),
    ])
    func onlyKnownScopesParse(text: String, known: Bool) {
        #expect((Scope(parsing: text) != nil) == known)
        if known { #expect(Scope(parsing: text)?.text == text) }
    }

    @Test func egressRoutesAreCoveredByEgressAll() {
        #expect(APICredentials.mayGrant(.egress("psp"), holding: [.egressAll]))
        #expect(!APICredentials.mayGrant(.egressAll, holding: [.egress("psp")]))
        #expect(!APICredentials.mayGrant(.aliasesReveal, holding: [.egressAll]))
    }

    /// No scope is spelled as text in the service's or the CLI's sources outside `Scope.swift`
    /// (doc comments aside): a typo there would be a scope nobody holds, or one everybody does.
    @Test func noScopeLiteralOutsideItsTable() throws {
        let found = try SourceScan.matches(
            Regex(#""(aliases|files|bins|tokens|egress):[^"]*""#), in: ["Sources/CloakService", "Sources/cloak"],
            excluding: ["Auth/Scope.swift"])
        #expect(found.isEmpty, "scope literals: \(found)")
    }
}
