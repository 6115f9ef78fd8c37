import CloakTesting
import Testing

@testable import CloakVault

/// Audit actions and results are one typed table each (issue 76), as scopes are: parsed from text
/// in one place, named as members everywhere else, written as the same bytes as before.
struct AuditActionTests {
    @Test func eachActionAndResultIsSpelledOnce() {
        #expect(Set(AuditAction.known.map(\.text)).count == AuditAction.known.count)
        #expect(Set(AuditResult.known.map(\.text)).count == AuditResult.known.count)
        for action in AuditAction.known { #expect(AuditAction(parsing: action.text) == action) }
        for result in AuditResult.known { #expect(AuditResult(parsing: result.text) == result) }
    }

    /// The texts the audit lines and the store have always carried (docs/audit.md's table).
    @Test(arguments: [
        (AuditAction.create, "create"), (.reveal, "reveal"), (.tokensCreate, "tokens_create"),
        (.jobApprove, "job_approve"), (.jobExportWritten, "job_export_written"), (.auditTrim, "audit.trim"),
        (.consoleSignIn, "console_sign_in"), (.keysRotate, "keys.rotate"), (.authRefused, "auth_refused"),
    ])
    func actionsKeepTheirText(action: AuditAction, text: String) {
        #expect(action.text == text)
    }

    @Test func unknownTextParsesToNothingButReadsBackAsStored() throws {
        #expect(AuditAction(parsing: "Reveal") == nil && AuditAction(parsing: "") == nil)
        #expect(AuditResult(parsing: "OK") == nil)
        // An event another version wrote keeps its words, and its block's bytes.
        let draft = AuditEvent.Draft(
            at: 1, action: AuditAction(stored: "future_action"), tokenID: "t", client: "c",
            result: AuditResult(stored: "future_result"))
        let decoded = try #require(AuditBlockBody.decode(AuditBlockBody.encode([draft])))
        #expect(decoded == [draft] && decoded[0].action.text == "future_action")
    }

    /// No action or result is spelled as text in the sources outside `AuditAction.swift` (doc
    /// comments aside): a typo there would be an action no search finds.
    @Test func noActionOrResultLiteralOutsideItsTable() throws {
        let found = try SourceScan.matches(
            try Regex(#"\b(action|audit|result): "[a-z_.]+"|\b(alias|note|audit)\([^"\n]*, "[a-z_]+"[,)]"#),
            in: ["Sources/CloakService", "Sources/cloak", "Sources/CloakVault"], excluding: ["Audit/AuditAction.swift"])
        #expect(found.isEmpty, "audit literals: \(found)")
    }
}
