import CloakVault

/// An export job's turns as a pure state machine (issue 76): whether a run counts the
/// selection or writes it, and while it writes, whether each page may go and the file may end;
/// decided here from what the runner reports (``JobRunner/runExport(_:)`` and
/// ``JobRunner/write(_:_:seal:summary:approval:)`` carry it out). Tests drive it without a
/// store, GnuPG or a clock.
///
/// ```
/// opening ──no count or no approval──▶ count (the runner counts, seals, awaits approval)
///    │
///    └──approved, by another person, lately, disk above its reserve──▶ writing
///          writing ──page (token still may, within the count)──▶ writing
///          writing ──walked (the digest approved)──▶ finish
///          anything else ──▶ end (failed), or requeue (a store that did not answer, a full disk)
/// ```
package struct ExportSteps {
    /// What the job's row held besides its spec.
    package enum Opened: Equatable, Sendable {
        /// Its count and approval, each once made.
        case found(ExportSummary?, ExportApproval?)
        /// They do not open with the job's key (a database writer altered them).
        case altered
        /// The store did not answer.
        case unavailable
    }

    /// What the runner looks at each turn.
    package struct Checks: Equatable, Sendable {
        /// The job's token still holds `jobs:export` and `aliases:reveal`, as the person who asked.
        var mayExport = true
        var belowDiskReserve = false
    }

    package enum Action: Equatable, Sendable {
        /// Walk the selection, seal its count and digest, and leave the job awaiting approval.
        case count
        /// Write the file of what was counted and approved.
        case write(ExportSummary, ExportApproval)
        /// Hand the page to GnuPG and read the next.
        case goOn
        /// Every row approved is written: end the file.
        case finish
        /// Give the job back a second later (it is taken again then).
        case requeue
        case end(JobState, failure: String?)
    }

    private enum Phase {
        case opening
        case counting
        case writing(approved: ExportSummary)
        /// The approved rows are written; the file ends (asked again, the same answer).
        case finished
        case ended
    }

    static var revoked: String { "the job's token was revoked or changed while the export ran" }

    private var phase = Phase.opening
    private let spec: ExportSpec
    private let approvalTTL: Int64
    /// Rows handed to GnuPG so far.
    private(set) var written: Int64 = 0

    init(spec: ExportSpec, approvalTTLSeconds: Int) {
        self.spec = spec
        approvalTTL = Int64(approvalTTLSeconds)
    }

    /// The job's count and approval as read at the run's start.
    mutating func opened(_ opened: Opened, _ checks: Checks, now: Int64) -> Action {
        guard case .opening = phase else { return impossible("opened") }
        guard checks.mayExport else {
            return end(failure: "the job's token no longer holds jobs:export and aliases:reveal as the same person")
        }
        let summary: ExportSummary?
        let approval: ExportApproval?
        switch opened {
        case let .found(counted, approved): (summary, approval) = (counted, approved)
        case .altered: return end(failure: "the job's selection or approval does not open (altered in the store)")
        case .unavailable: return requeue()
        }
        guard let summary, let approval else {
            phase = .counting
            return .count
        }
        // What was approved is what was counted, to this recipient, by another person, lately.
        guard approval.rows == summary.rows, approval.digest == summary.digest,
            approval.fingerprint == spec.fingerprint, approval.person != spec.person
        else { return end(failure: "the job's approval is not for its selection and recipient") }
        guard now - approval.at <= approvalTTL else {
            return end(failure: "the job's approval is older than jobs.approval_ttl_s: ask for the export again")
        }
        // An export's file is written into the store: below the disk reserve it waits, queued.
        if checks.belowDiskReserve { return requeue() }
        phase = .writing(approved: summary)
        return .write(summary, approval)
    }

    /// A page of `rows` rows read while writing: it goes while the token may and the rows stay
    /// within the count approved.
    mutating func page(rows: Int, _ checks: Checks) -> Action {
        guard case let .writing(approved) = phase else { return impossible("page") }
        guard checks.mayExport else { return end(failure: Self.revoked) }
        written += Int64(rows)
        guard written <= approved.rows else { return end(failure: "the selection grew past what was approved") }
        return .goOn
    }

    /// The walk ended with the digest of the rows it read: the file ends only when those are the
    /// rows counted and approved.
    mutating func walked(digest: String?, _ checks: Checks) -> Action {
        // GnuPG may ask again for input after it was told the input ended.
        if case .finished = phase { return .finish }
        guard case let .writing(approved) = phase else { return impossible("walked") }
        guard checks.mayExport else { return end(failure: Self.revoked) }
        guard digest == approved.digest else {
            return end(failure: "the selection changed since it was counted and approved")
        }
        phase = .finished
        return .finish
    }

    private mutating func end(failure: String) -> Action {
        phase = .ended
        return .end(.failed, failure: failure)
    }

    private mutating func requeue() -> Action {
        phase = .ended
        return .requeue
    }

    /// An event the runner never reports in this phase: a bug in the runner (asserts in debug
    /// builds; release builds fail the job).
    private mutating func impossible(_ event: StaticString) -> Action {
        assertionFailure("ExportSteps: \(event) in \(phase)")
        return end(failure: "the job's runner lost its place (\(event))")
    }
}
