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
        let root = TestServer.repositoryRoot
        let pattern = try Regex(#""(aliases|files|bins|tokens|egress):[^"]*""#)
        var found: [String] = []
        for folder in ["Sources/CloakService", "Sources/cloak"] {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") && !file.hasSuffix("Auth/Scope.swift") {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where !line.trimmingCharacters(in: .whitespaces).hasPrefix("///") && line.contains(pattern) {
                    found.append("\(folder)/\(file):\(n + 1)")
                }
            }
        }
        #expect(found.isEmpty, "scope literals: \(found)")
    }
}
