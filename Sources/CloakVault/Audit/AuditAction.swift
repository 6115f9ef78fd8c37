/// What an audit event records, one value per action, spelled in this file only (issue 76; as
/// ``Scope`` spells each scope once): endpoints, jobs, commands and the vault name actions as
/// `.reveal` or `.jobApprove`, never as text. The text is what the `audit` line and the store
/// keep, byte for byte as before the type existed.
///
/// An event read back from the store is ``init(stored:)``: any text an older or newer version
/// wrote is kept as it is (a search still finds it), though this version never writes it.
package struct AuditAction: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The action as the audit line and the store spell it (`job_approve`).
    package let text: String

    private init(_ text: String) { self.text = text }

    // Values: the vault's own, through the API, the forms and the doors.
    package static let create = AuditAction("create")
    package static let reveal = AuditAction("reveal")
    package static let lookup = AuditAction("lookup")
    package static let update = AuditAction("update")
    package static let delete = AuditAction("delete")
    package static let keep = AuditAction("keep")
    package static let cardAttributes = AuditAction("card_attributes")
    package static let elementsSession = AuditAction("elements_session")
    package static let fileUpload = AuditAction("file_upload")
    package static let fileReveal = AuditAction("file_reveal")
    // Credentials, and who asked with none.
    package static let tokensCreate = AuditAction("tokens_create")
    package static let tokensRevoke = AuditAction("tokens_revoke")
    package static let tokensSign = AuditAction("tokens_sign")
    package static let tokensAdopt = AuditAction("tokens_adopt")
    package static let authRefused = AuditAction("auth_refused")
    package static let bucketLimit = AuditAction("bucket_limit")
    // Administration and the console.
    package static let auditRead = AuditAction("audit_read")
    package static let auditTrim = AuditAction("audit.trim")
    package static let binsRollback = AuditAction("bins_rollback")
    package static let binsAdopt = AuditAction("bins_adopt")
    package static let routesTest = AuditAction("routes_test")
    package static let keysRotate = AuditAction("keys.rotate")
    package static let keysRewrap = AuditAction("keys.rewrap")
    package static let keysRetire = AuditAction("keys.retire")
    package static let keysMigrate = AuditAction("keys.migrate")
    package static let consoleSignIn = AuditAction("console_sign_in")
    package static let consoleSignOut = AuditAction("console_sign_out")
    // Bulk jobs.
    package static let jobImport = AuditAction("job_import")
    package static let jobExport = AuditAction("job_export")
    package static let jobExportCounted = AuditAction("job_export_counted")
    package static let jobExportWritten = AuditAction("job_export_written")
    package static let jobApprove = AuditAction("job_approve")
    package static let jobCancel = AuditAction("job_cancel")
    package static let jobResume = AuditAction("job_resume")
    package static let jobDownload = AuditAction("job_download")
    package static let jobEnd = AuditAction("job_end")
    /// What an access policy changed of a value on its way out (issue 77): a value denied
    /// (answered as a miss), masked or redacted, naming the policy and the rule.
    package static let policyDeny = AuditAction("policy_deny")
    package static let policyMask = AuditAction("policy_mask")
    package static let policyRedact = AuditAction("policy_redact")

    /// Every action this version writes.
    package static let known: [AuditAction] = [
        .create, .reveal, .lookup, .update, .delete, .keep, .cardAttributes, .elementsSession, .fileUpload,
        .fileReveal, .tokensCreate, .tokensRevoke, .tokensSign, .tokensAdopt, .authRefused, .bucketLimit, .auditRead,
        .auditTrim, .binsRollback, .binsAdopt, .routesTest, .keysRotate, .keysRewrap, .keysRetire, .keysMigrate,
        .consoleSignIn, .consoleSignOut, .jobImport, .jobExport,
        .jobExportCounted, .jobExportWritten, .jobApprove, .jobCancel, .jobResume, .jobDownload, .jobEnd,
        .policyDeny, .policyMask, .policyRedact,
    ]

    /// `text` as one of ``known``; nil otherwise.
    package init?(parsing text: String) {
        guard let known = Self.known.first(where: { $0.text == text }) else { return nil }
        self = known
    }

    /// An action as the store kept it, whoever wrote it.
    package init(stored text: String) { self.init(text) }

    package var description: String { text }

    package static func < (a: AuditAction, b: AuditAction) -> Bool { a.text < b.text }
}

/// How an audited action ended, one value per result, spelled here only (as ``AuditAction``).
package struct AuditResult: Hashable, Sendable, CustomStringConvertible {
    package let text: String

    private init(_ text: String) { self.text = text }

    package static let ok = AuditResult("ok")
    /// Refused: a rule, a limit or a credential said no; nothing changed.
    package static let refused = AuditResult("refused")
    /// What it named was not there (an alias, a record).
    package static let notFound = AuditResult("not_found")
    /// It could not be done (the store, a key).
    package static let error = AuditResult("error")
    /// A job that ended without doing its work, and one its owner cancelled.
    package static let failed = AuditResult("failed")
    package static let cancelled = AuditResult("cancelled")
    /// A guess limit in report mode: counted, not enforced.
    package static let counted = AuditResult("counted")
    /// The route inspector's verdict on a sample.
    package static let wouldSend = AuditResult("would_send")
    package static let wouldRefuse = AuditResult("would_refuse")
    /// A card's attributes given instead of its value.
    package static let attributes = AuditResult("attributes")
    /// A file reveal of an alias whose value is not a file.
    package static let notAFile = AuditResult("not_a_file")
    /// An Elements reveal session used where it may not be: another page's audience, a revoked
    /// token's session, another client, an alias the session was not opened for.
    package static let wrongAudience = AuditResult("wrong_audience")
    package static let tokenRevoked = AuditResult("token_revoked")
    package static let otherClient = AuditResult("other_client")
    package static let notInSession = AuditResult("not_in_session")

    package static let known: [AuditResult] = [
        .ok, .refused, .notFound, .error, .failed, .cancelled, .counted, .wouldSend, .wouldRefuse, .attributes,
        .notAFile, .wrongAudience, .tokenRevoked, .otherClient, .notInSession,
    ]

    package init?(parsing text: String) {
        guard let known = Self.known.first(where: { $0.text == text }) else { return nil }
        self = known
    }

    /// A result as the store kept it, whoever wrote it.
    package init(stored text: String) { self.init(text) }

    package var description: String { text }
}
