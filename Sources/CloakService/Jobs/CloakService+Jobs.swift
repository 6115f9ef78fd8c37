import CloakCore
import CloakJobs
import CloakVault
import Foundation
import Logging

extension CloakService {
    func adminJobs(_ c: RequestContext) throws(CloakError) -> AdminJobsHandler {
        guard let caller = c.identity.token else { throw CloakError(.forbidden, "a job belongs to a token") }
        return AdminJobsHandler(
            vault: try requireVault(c.request, c.identity), configuration: configuration, owner: caller.id,
            caller: caller,
            mayCreate: c.identity.token?.scopes.contains(.aliasesCreate) == true, outcome: c.outcome,
            now: Int64(Date().timeIntervalSince1970), refusalTallies: state.refusalTallies)
    }

    /// The node's job runner (nil without a vault). `serving` is the service the node answers
    /// with now (``ServiceHost``): each job, and each of its batches, reads its forms, limits and
    /// guess admission there, so a reload applies to jobs as it does to requests. The runner
    /// sees a token only as a ``JobCaller``: what its scopes let a job do.
    func jobRunner(serving: (@Sendable () -> CloakService)? = nil) -> JobRunner? {
        guard let vault else { return nil }
        let directory = state.directory
        let current: @Sendable () -> CloakService = serving ?? { [self] in self }
        let audit = AuditLog(logger: logger, vault: vault)
        return JobRunner(
            JobRunner.Dependencies(
                vault: vault,
                serving: {
                    let configuration = current().configuration
                    return JobConfiguration(
                        jobs: configuration.jobs, importRowsPerHour: configuration.limits.importRowsPerHour,
                        forms: configuration.forms, store: configuration.vault.store)
                },
                caller: { id in
                    // A token held to access policies runs no job (issue 77): jobs do not
                    // judge them yet, and a policy given to a token later stops its jobs.
                    directory.token(id: id).map { token in
                        let free = !token.access.isRestricted
                        return JobCaller(
                            mayImport: free && token.scopes.contains(.jobsImport)
                                && token.scopes.contains(.aliasesCreate),
                            mayExport: free && token.scopes.contains(.jobsExport)
                                && token.scopes.contains(.aliasesReveal),
                            person: token.person, admission: current().importAdmission(for: token))
                    }
                },
                today: context.today,
                audit: JobAudit(
                    written: { [logger] entries in AuditLog(logger: logger).record(entries, level: .info) },
                    record: { audit.record($0, level: .info) }),
                logger: logger,
                belowDiskReserve: { [reserve = state.diskReserve] in
                    reserve.isBelow(current().configuration.limits.diskReserveMiB)
                }))
    }

    /// A token's guess limits for the rows of its imports: its `bucket_values_per_hour`, as its
    /// creates are held to, without its request rate (an import's rate is
    /// `limits.import_rows_per_hour`). Nil for a token without a bucket limit.
    func importAdmission(for token: ServiceConfiguration.AccessToken) -> CreateAdmission? {
        guard let limit = token.createBucketLimit(default: configuration.limits.bucketValuesPerHour) else { return nil }
        return CreateAdmission(
            account: token.guessKey, presenter: token.id, limiter: guessLimiter, valuesPerHour: limit,
            guessLimit: token.lookupBucketLimit(default: configuration.limits.bucketValuesPerHour),
            charge: { _ in nil },
            refused: { [metrics, audit = AuditLog(logger: logger, vault: vault)] refusal, enforced in
                metrics.bucketLimited(refusal.format.rawValue)
                audit.record(
                    AuditEvent.Draft(
                        made: .bucketLimit, tokenID: token.id, client: "job",
                        result: enforced ? .refused : .counted,
                        facts: [("format", refusal.format.rawValue), ("limit", refusal.limit.name)]),
                    level: .warning)
            },
            memoryBudget: configuration.limits.guessMemoryMiB << 20)
    }
}
