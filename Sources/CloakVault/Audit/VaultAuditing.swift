import Foundation
import Synchronization

/// Whom a vault call acts for, as its audit events name them: the service's request outcome
/// (action, token, client), opaque to the vault. Bound around a call like a trace
/// (``VaultAuditing/current``); each job the call queues carries it.
package protocol VaultAuditSubject: Sendable {
    /// The event of one alias `operation` acted on (its keyed reference, or nil) with `result`;
    /// nil when this subject does not audit that operation.
    func draft(aliasReference: String?, result: AuditResult, at: Int64, operation: VaultOperation) -> AuditEvent.Draft?
    /// Drafts made for this subject: `stored` when the vault committed them with the change
    /// (after the commit, before the call's completion), else still to be stored by the caller
    /// (an answer that needed no job, such as a value the dedupe cache knew).
    func noted(_ drafts: [AuditEvent.Draft], stored: Bool)
}

/// How a change's audit event lands in the change's own transaction (issue 59): the caller
/// binds its subject around the vault call (``current``), the job carries it, and the job's
/// body notes what it did (``note(_:_:)``) while it runs on the vault thread; the executor
/// chains and writes the notes of the batch's surviving jobs just before it commits, and drops
/// those of a job whose savepoint was rolled back.
///
/// ```swift
/// VaultAuditing.current.withValue(outcome) {
///     vault.delete(alias, completion: done)  // its job's event commits with the delete
/// }
/// ```
/// What a vault job did, for a subject that audits some operations only (a route's reveals).
package enum VaultOperation: Sendable {
    case create, reveal, change
}

package enum VaultAuditing {
    /// The subject of the vault call under way on this thread (a task local bound by a
    /// synchronous `withValue`), read where a job is made.
    package static let current = TaskLocal<(any VaultAuditSubject)?>(wrappedValue: nil)

    /// The notes of the job running on this (vault) thread: bound by the executor around the
    /// job's body.
    static let running = TaskLocal<JobNotes?>(wrappedValue: nil)

    /// Notes, for the running job's subject, one alias acted on; nothing when the job has no
    /// subject or is not a vault job.
    static func note(_ aliasReference: @autoclosure () -> String?, _ result: AuditResult, _ operation: VaultOperation) {
        guard let notes = running.get(),
            let draft = notes.subject.draft(
                aliasReference: aliasReference(), result: result, at: nowMilliseconds(), operation: operation)
        else { return }
        notes.add(draft)
    }

    /// Adds `event`, made whole by the job itself (a policy's change to a reveal, issue 77), to
    /// the running job's notes: it commits with the job's others.
    static func add(_ event: AuditEvent.Draft) {
        running.get()?.add(event)
    }

    /// Milliseconds since the epoch: an event's time.
    package static func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// What one job noted, on the vault thread. `@unchecked Sendable`: made, filled and read on the
/// executor's thread only (the task local asks for `Sendable`).
final class JobNotes: @unchecked Sendable {
    let subject: any VaultAuditSubject
    private(set) var drafts: [AuditEvent.Draft] = []

    init(subject: any VaultAuditSubject) { self.subject = subject }

    func add(_ draft: AuditEvent.Draft) { drafts.append(draft) }
}
