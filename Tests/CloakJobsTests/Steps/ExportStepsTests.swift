import CloakVault
import Testing

@testable import CloakJobs

/// ``ExportSteps`` driven by tables: whether a run counts, writes, waits or fails, and whether
/// each page may go, without a store, GnuPG or a clock.
struct ExportStepsTests {
    static let spec = ExportSpec(
        selection: .everything, layout: .jsonl, recipient: "key", fingerprint: "F1", person: "alice@example.com")
    static let counted = ExportSummary(rows: 1_000, missing: 0, digest: "d1", asOf: 100)
    static let approved = ExportApproval(
        token: "bob", person: "bob@example.com", at: 200, rows: 1_000, digest: "d1", fingerprint: "F1")
    static let ttl = 3_600

    struct Opening: CustomTestStringConvertible, Sendable {
        var name: String
        var opened: ExportSteps.Opened
        var checks = ExportSteps.Checks()
        var now: Int64 = 300
        var expected: ExportSteps.Action
        var testDescription: String { name }
    }

    static func approval(_ change: (inout ExportApproval) -> Void) -> ExportSteps.Opened {
        var approval = approved
        change(&approval)
        return .found(counted, approval)
    }

    static let openings: [Opening] = [
        Opening(name: "a new export is counted", opened: .found(nil, nil), expected: .count),
        Opening(name: "a count without an approval is counted again", opened: .found(counted, nil), expected: .count),
        Opening(
            name: "an approved export is written", opened: .found(counted, approved),
            expected: .write(counted, approved)),
        Opening(
            name: "an approval of another count fails", opened: approval { $0.rows = 999 },
            expected: .end(.failed, failure: "the job's approval is not for its selection and recipient")),
        Opening(
            name: "an approval of another digest fails", opened: approval { $0.digest = "d2" },
            expected: .end(.failed, failure: "the job's approval is not for its selection and recipient")),
        Opening(
            name: "an approval for another recipient fails", opened: approval { $0.fingerprint = "F2" },
            expected: .end(.failed, failure: "the job's approval is not for its selection and recipient")),
        Opening(
            name: "an approval by the person who asked fails", opened: approval { $0.person = "alice@example.com" },
            expected: .end(.failed, failure: "the job's approval is not for its selection and recipient")),
        Opening(
            name: "an approval older than the approval TTL fails", opened: .found(counted, approved),
            now: 200 + Int64(ttl) + 1,
            expected: .end(
                .failed, failure: "the job's approval is older than jobs.approval_ttl_s: ask for the export again")),
        Opening(
            name: "an approval at its TTL still writes", opened: .found(counted, approved), now: 200 + Int64(ttl),
            expected: .write(counted, approved)),
        Opening(
            name: "a disk below its reserve gives the job back", opened: .found(counted, approved),
            checks: ExportSteps.Checks(belowDiskReserve: true), expected: .requeue),
        Opening(
            name: "a disk below its reserve still lets a count run", opened: .found(nil, nil),
            checks: ExportSteps.Checks(belowDiskReserve: true), expected: .count),
        Opening(
            name: "a revoked token fails the job before anything is read further",
            opened: .found(counted, approved), checks: ExportSteps.Checks(mayExport: false),
            expected: .end(
                .failed, failure: "the job's token no longer holds jobs:export and aliases:reveal as the same person")),
        Opening(
            name: "a count or approval a database writer altered fails", opened: .altered,
            expected: .end(.failed, failure: "the job's selection or approval does not open (altered in the store)")),
        Opening(name: "a store that did not answer gives the job back", opened: .unavailable, expected: .requeue),
    ]

    @Test(arguments: openings)
    func opens(_ test: Opening) {
        var steps = ExportSteps(spec: Self.spec, approvalTTLSeconds: Self.ttl)
        #expect(steps.opened(test.opened, test.checks, now: test.now) == test.expected)
    }

    static func writing() -> ExportSteps {
        var steps = ExportSteps(spec: spec, approvalTTLSeconds: ttl)
        _ = steps.opened(.found(counted, approved), .init(), now: 300)
        return steps
    }

    @Test func theApprovedRowsAreWrittenAndTheFileEnds() {
        var steps = Self.writing()
        for _ in 0..<2 { #expect(steps.page(rows: 500, .init()) == .goOn) }
        #expect(steps.written == 1_000)
        #expect(steps.walked(digest: "d1", .init()) == .finish)
        // Asked again (GnuPG reading past the end), the same answer.
        #expect(steps.walked(digest: "d1", .init()) == .finish)
    }

    @Test func aSelectionThatGrewStopsAtTheFirstRowPastTheCount() {
        var steps = Self.writing()
        #expect(steps.page(rows: 500, .init()) == .goOn)
        #expect(steps.page(rows: 501, .init()) == .end(.failed, failure: "the selection grew past what was approved"))
    }

    @Test(arguments: ["d2", nil])
    func aSelectionThatChangedWritesNoEnd(digest: String?) {
        var steps = Self.writing()
        #expect(steps.page(rows: 1_000, .init()) == .goOn)
        #expect(
            steps.walked(digest: digest, .init())
                == .end(.failed, failure: "the selection changed since it was counted and approved"))
    }

    @Test func aTokenRevokedMidExportStopsAtTheNextPageOrTheEnd() {
        var steps = Self.writing()
        #expect(steps.page(rows: 500, .init()) == .goOn)
        #expect(steps.page(rows: 500, .init(mayExport: false)) == .end(.failed, failure: ExportSteps.revoked))
        var ending = Self.writing()
        #expect(ending.page(rows: 1_000, .init()) == .goOn)
        #expect(ending.walked(digest: "d1", .init(mayExport: false)) == .end(.failed, failure: ExportSteps.revoked))
    }
}
