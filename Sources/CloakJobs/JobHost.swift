import CloakCore
import CloakVault

/// What the jobs read of the node's configuration: the one it serves now, asked again for each
/// job and batch (a reload applies to jobs as it does to requests, review V, item 10). The
/// service makes it from its own configuration; nothing here reads YAML.
package struct JobConfiguration: Sendable, CustomStringConvertible {
    /// `jobs:`.
    package var jobs = JobSettings()
    /// `limits.import_rows_per_hour`: an import's rate.
    package var importRowsPerHour = 36_000_000
    /// The forms an import may name (`forms:`).
    package var forms: [String: FormSchema] = [:]
    /// `vault.store`: an export reads on a connection of its own to it (``ExportReads``). It may
    /// hold the database's password: never logged (``description`` shows it redacted).
    package var store = ""

    package init(jobs: JobSettings, importRowsPerHour: Int, forms: [String: FormSchema], store: String) {
        self.jobs = jobs
        self.importRowsPerHour = importRowsPerHour
        self.forms = forms
        self.store = store
    }

    package var description: String {
        "JobConfiguration(jobs: \(jobs), importRowsPerHour: \(importRowsPerHour), forms: \(forms.keys.sorted()), "
            + "store: \(StoreURL.redacted(store)))"
    }
}

/// A job's token as the runner sees it, asked again before every batch and page: nil when it
/// is gone, revoked or expired. The service decides from its scopes (the vocabulary stays
/// there): an import needs `jobs:import` and `aliases:create`, an export `jobs:export` and
/// `aliases:reveal`.
package struct JobCaller: Sendable {
    package var mayImport: Bool
    package var mayExport: Bool
    /// The person the token is for (an export runs only for the person who asked).
    package var person: String?
    /// The token's guess limits for an import's rows (nil: none), from the same lookup as the
    /// rest: a token gone between two lookups can never read as one without limits.
    package var admission: (any ImportAdmission)?

    package init(mayImport: Bool, mayExport: Bool, person: String?, admission: (any ImportAdmission)? = nil) {
        self.mayImport = mayImport
        self.mayExport = mayExport
        self.person = person
        self.admission = admission
    }
}

/// The guess limits an import's rows meet, as the token's creates do (the service's
/// `CreateAdmission`, without the request rate: `limits.import_rows_per_hour` is an import's).
package protocol ImportAdmission: Sendable {
    func admitRow(_ requests: [AliasRequest], vault: Vault) -> RowAdmission
}

/// What an import job's row meets (``ImportAdmission/admitRow(_:vault:)``): where the refusal is
/// the token's cap or the node's memory for guesses, which a value does not earn by its bucket,
/// the job waits for room rather than refusing the row (the rows of a migration past a million
/// would otherwise all be refused within the hour).
package enum RowAdmission {
    case admitted
    case refused(VaultError)
    /// No room now, in the token's cap or the node's budget: try again in `retryAfter` seconds.
    case full(retryAfter: Int)
}

/// Where the jobs' audit events go: the service's audit log, which writes each line and, for
/// ``record``, stores the event.
package struct JobAudit: Sendable {
    /// Writes the lines of events already stored with a change.
    package var written: @Sendable ([AuditEvent.Draft]) -> Void
    /// Stores `event` and writes its line.
    package var record: @Sendable (AuditEvent.Draft) -> Void

    package init(
        written: @escaping @Sendable ([AuditEvent.Draft]) -> Void,
        record: @escaping @Sendable (AuditEvent.Draft) -> Void
    ) {
        self.written = written
        self.record = record
    }
}
