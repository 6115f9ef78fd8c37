import CloakCore
import CloakCrypto
import CloakHTTP
import CloakVault
import Foundation
import Logging
import Synchronization

/// Writing an approved export (issue 60): the selection read a page at a time on a thread of its
/// own, each page's lines handed to GnuPG, GnuPG's message sealed into the job's chunks.
extension JobRunner {
    /// Writes the approved export: lines to GnuPG, GnuPG's message to sealed chunks.
    func write(
        _ job: StoredJob, _ spec: ExportSpec, seal: JobSeal, summary: ExportSummary, approval: ExportApproval,
        _ steps: ExportSteps
    ) {
        var steps = steps
        let encryption: OpenPGPEncryption
        do {
            encryption = try OpenPGPEncryption(publicKey: Array(spec.recipient.utf8))
        } catch {
            return end(job, .failed, failure: "the recipient's key: \(error.description)")
        }
        guard encryption.fingerprint == spec.fingerprint else {
            return end(job, .failed, failure: "the recipient's key is not the one approved")
        }
        let writer = ExportWriter(runner: self, job: job, seal: seal, summary: summary)
        let filter = spec.filter(asOf: summary.asOf)
        // Pages are read on a thread of their own, a page ahead of GnuPG on an embedded store,
        // when GnuPG asks on a server (``preparesAhead``); GnuPG's callbacks (the lines it
        // reads, the message it writes, the lease) all run here, on this thread.
        let queue = ExportPages(ahead: preparesAhead)
        let read = ThreadWait<Void> { done in
            let reader = Thread { [self] in
                // As the runner: a page read and opened here waits for the loops, not they for it.
                ThreadNiceness.lower()
                do {
                    let digest =
                        spec.layout.isRows
                        ? try walkRows(job, spec, filter: filter, open: true, renews: false) { page in
                            try queue.put(.rows(page))
                        }.digest
                        : try walk(job, spec, seal: seal, filter: filter, open: true, renews: false) { page in
                            try queue.put(.values(page))
                        }
                    queue.finish(nil, digest: digest)
                } catch {
                    queue.finish(error, digest: nil)
                }
                done(())
            }
            reader.name = "cloak-jobs-export"
            reader.start()
        }
        let fields = summary.groups?.fields ?? []
        var pending: [UInt8] = spec.layout.isRows ? spec.rowsHeader(fields: fields) : spec.header
        do {
            try encryption.encrypt(
                input: { [self] in
                    while pending.isEmpty {
                        // The requester's token is asked again for every page: one revoked, or
                        // given to another person, meanwhile stops the export.
                        let checks = ExportSteps.Checks(mayExport: mayExport(job, spec))
                        guard let chunk = try queue.take(tick: { try writer.renewIfDue() }) else {
                            // The rows written must be the rows counted and approved.
                            if case let .end(_, failure) = steps.walked(digest: queue.digest, checks) {
                                throw Walk.failed(failure ?? "")
                            }
                            return nil
                        }
                        if case let .end(_, failure) = steps.page(rows: chunk.count, checks) {
                            throw Walk.failed(failure ?? "")
                        }
                        switch chunk {
                        case let .values(page): for row in page.rows { spec.line(row, into: &pending) }
                        case let .rows(page): for row in page.rows { spec.rowLine(row, fields: fields, into: &pending) }
                        }
                        writer.rowsRead = steps.written
                    }
                    defer { pending = [] }
                    return pending
                },
                output: { bytes in try writer.append(bytes) })
            // The event commits with the last chunk and the state `done` (review V, item 6).
            try writer.finish(
                recording: entry(
                    job, spec, .jobExportWritten, summary: summary, approval: approval, exported: steps.written))
        } catch {
            queue.cancel()
            read.wait()
            switch error {
            case let walk as Walk: return ended(job, walk)
            case is JobRunnerLost: return ended(job, .lost)
            default:
                if let walk = queue.failure as? Walk { return ended(job, walk) }
                return end(job, .failed, failure: "the export could not be written: \(error)")
            }
        }
        read.wait()
        dependencies.logger.info(
            "jobs: job ended", metadata: ["job": "\(job.id)", "state": "done", "exported": "\(steps.written)"])
        recordEnd(job, .done)
    }

    /// The audit event of a step the runner took, stored with the step's own commit.
    func entry(
        _ job: StoredJob, _ spec: ExportSpec, _ action: AuditAction, summary: ExportSummary, approval: ExportApproval?,
        exported: Int64? = nil
    ) -> AuditEvent.Draft {
        var facts: [(key: String, value: String)] = [
            ("job", job.id.text), ("requester", job.owner), ("requester_person", spec.person),
            ("selection_digest", summary.digest), ("rows", "\(summary.rows)"), ("recipient", spec.fingerprint),
        ]
        if let approval {
            facts += [("approver", approval.token), ("approver_person", approval.person)]
        }
        if let exported { facts.append(("exported", "\(exported)")) }
        return AuditEvent.Draft(made: action, tokenID: job.owner, client: "job", result: .ok, facts: facts)
    }
}
