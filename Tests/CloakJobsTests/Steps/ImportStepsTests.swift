import CloakVault
import Testing

@testable import CloakJobs

/// ``ImportSteps`` driven by tables: what the runner reports, and what the machine answers,
/// without a store, a thread or a clock.
struct ImportStepsTests {
    struct Batch: ImportStepsBatch, Equatable, Sendable {
        var rows: Int
        var isLast = false
        /// The row it starts at (the random runner's; the tables leave it 0).
        var first: Int64 = 0
    }

    typealias Steps = ImportSteps<Batch>

    /// One thing the runner reports, and what the machine must answer (nil for ``madeAhead``,
    /// which answers nothing).
    enum Report: Sendable {
        case next(Steps.Checks = .init())
        case made(Steps.Made)
        case madeAhead(Steps.Made)
        case committed(Steps.Committed)
        case waited(Steps.Waited)
        case paused
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var preparesAhead = false
        var cursor: Int64 = 0
        var script: [(Report, Steps.Action?)]
        var testDescription: String { name }
    }

    static func moved(_ cursor: Int64) -> Steps.Committed { .moved(JobProgress(cursor: cursor)) }
    static let revoked = Steps.Action.end(.failed, failure: Steps.revoked)

    static let cases: [Case] = [
        Case(
            name: "a job's batches, in order, to the last",
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: nil)),
                (.committed(moved(256)), .check),
                (.next(), .make(from: 256)),
                (.made(.batch(Batch(rows: 10, isLast: true))), .check),
                (.next(), .commit(Batch(rows: 10, isLast: true), makeAhead: nil)),
                (.committed(moved(266)), .finished(JobProgress(cursor: 266))),
            ]),
        Case(
            name: "a cancelled or taken-over job resumes at its cursor",
            cursor: 512,
            script: [
                (.next(), .make(from: 512)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: nil)),
                (.committed(moved(768)), .check),
                (.next(), .make(from: 768)),
            ]),
        Case(
            name: "on an embedded store the next batch is made while one commits",
            preparesAhead: true,
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: 256)),
                (.madeAhead(.batch(Batch(rows: 100, isLast: true))), nil),
                (.committed(moved(256)), .check),
                // The last batch makes none ahead.
                (.next(), .commit(Batch(rows: 100, isLast: true), makeAhead: nil)),
                (.committed(moved(356)), .finished(JobProgress(cursor: 356))),
            ]),
        Case(
            name: "a failed batch is made again from the cursor, the one made ahead dropped",
            preparesAhead: true, cursor: 1_000,
            script: [
                (.next(), .make(from: 1_000)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: 1_256)),
                (.madeAhead(.batch(Batch(rows: 256))), nil),
                (.committed(.failed("disk I/O error")), .pause(attempt: 1, reason: "disk I/O error")),
                (.paused, .check),
                (.next(), .make(from: 1_000)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: 1_256)),
                (.madeAhead(.retry), nil),
                // A success clears the count; the batch not made ahead is made at its turn.
                (.committed(moved(1_256)), .check),
                (.next(), .make(from: 1_256)),
            ]),
        Case(
            name: "a full guess window waits, keeps its rows and refuses none",
            script: [
                (.next(), .make(from: 0)),
                (.made(.full(seconds: 1)), .wait(.guessWindows, seconds: 5, log: true)),
                (.waited(.elapsed), .check),
                (.next(), .make(from: 0)),
                (.made(.full(seconds: 3_600)), .wait(.guessWindows, seconds: 60, log: false)),
                (.waited(.elapsed), .check),
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 40))), .check),
                (.next(), .commit(Batch(rows: 40), makeAhead: nil)),
                (.committed(moved(40)), .check),
                (.next(), .make(from: 40)),
                // A new stretch of waiting is logged again.
                (.made(.full(seconds: 10)), .wait(.guessWindows, seconds: 10, log: true)),
            ]),
        Case(
            name: "a disk below its reserve waits, logged once a stretch, the batch in hand kept",
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 8))), .check),
                (.next(Steps.Checks(belowDiskReserve: true)), .wait(.diskReserve, seconds: 5, log: true)),
                (.waited(.elapsed), .check),
                (.next(Steps.Checks(belowDiskReserve: true)), .wait(.diskReserve, seconds: 5, log: false)),
                (.waited(.elapsed), .check),
                (.next(), .commit(Batch(rows: 8), makeAhead: nil)),
            ]),
        Case(
            name: "a lost lease lets the job go, at a commit or in a wait",
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 8))), .check),
                (.next(), .commit(Batch(rows: 8), makeAhead: nil)),
                (.committed(.lost), .letGo),
            ]),
        Case(
            name: "a lease lost in a wait lets the job go",
            script: [
                (.next(), .make(from: 0)),
                (.made(.full(seconds: 30)), .wait(.guessWindows, seconds: 30, log: true)),
                (.waited(.lost), .letGo),
            ]),
        Case(
            name: "a token revoked before a commit fails the job, nothing committed",
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 8))), .check),
                (.next(Steps.Checks(tokenMayImport: false)), revoked),
            ]),
        Case(
            name: "a token revoked in a wait fails the job",
            script: [
                (.next(Steps.Checks(belowDiskReserve: true)), .wait(.diskReserve, seconds: 5, log: true)),
                (.waited(.revoked), revoked),
            ]),
        Case(
            name: "a stopping node gives the job back",
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 8))), .check),
                (.next(Steps.Checks(stopping: true)), .end(.queued, failure: nil)),
            ]),
        Case(
            name: "a stop while the rate is waited for gives the job back",
            script: [(.next(), .make(from: 0)), (.made(.stopped), .end(.queued, failure: nil))]),
        Case(
            name: "a stop in a wait gives the job back",
            script: [
                (.next(), .make(from: 0)),
                (.made(.full(seconds: 5)), .wait(.guessWindows, seconds: 5, log: true)),
                (.waited(.stopping), .end(.queued, failure: nil)),
            ]),
        Case(
            name: "an input that cannot be read is made again after a pause",
            cursor: 7,
            script: [
                (.next(), .make(from: 7)), (.made(.retry), .pause(attempt: nil, reason: nil)), (.paused, .check),
                (.next(), .make(from: 7)),
            ]),
        Case(
            name: "an input cut short fails the job",
            script: [(.next(), .make(from: 0)), (.made(.failed("cut short")), .end(.failed, failure: "cut short"))]),
        Case(
            name: "an input cut short after the batch made ahead fails once the rows before it commit",
            preparesAhead: true,
            script: [
                (.next(), .make(from: 0)),
                (.made(.batch(Batch(rows: 256))), .check),
                (.next(), .commit(Batch(rows: 256), makeAhead: 256)),
                (.madeAhead(.failed("cut short")), nil),
                (.committed(moved(256)), .end(.failed, failure: "cut short")),
            ]),
    ]

    @Test(arguments: cases)
    func answers(_ test: Case) {
        var steps = Steps(from: JobProgress(cursor: test.cursor), preparesAhead: test.preparesAhead)
        for (index, (report, expected)) in test.script.enumerated() {
            let answer: Steps.Action?
            switch report {
            case let .next(checks): answer = steps.next(checks)
            case let .made(made): answer = steps.made(made)
            case let .madeAhead(made):
                steps.madeAhead(made)
                answer = nil
            case let .committed(committed): answer = steps.committed(committed)
            case let .waited(waited): answer = steps.waited(waited)
            case .paused: answer = steps.paused()
            }
            #expect(answer == expected, "step \(index) of \(test.name)")
        }
    }

    @Test func aBatchThatFailsTenTimesFailsItsJob() {
        var steps = Steps(from: JobProgress(), preparesAhead: false)
        for attempt in 1...Steps.attempts {
            #expect(steps.next(.init()) == .make(from: 0))
            #expect(steps.made(.batch(Batch(rows: 3))) == .check)
            #expect(steps.next(.init()) == .commit(Batch(rows: 3), makeAhead: nil))
            let answer = steps.committed(.failed("locked"))
            if attempt < Steps.attempts {
                #expect(answer == .pause(attempt: attempt, reason: "locked"))
                #expect(steps.paused() == .check)
            } else {
                #expect(answer == .end(.failed, failure: "a batch failed 10 times; the last time: locked"))
            }
        }
    }

    /// A runner over an input of `rows` rows, whose commits fail at random: every row is
    /// committed once, in order, whatever fails, with batches made ahead or not.
    @Test(arguments: [false, true], [1, 7, 42])
    func everyRowCommitsOnceInOrderWhateverFails(preparesAhead: Bool, seed: UInt64) {
        let rows: Int64 = 5_000
        var random = seed
        func roll(_ percent: UInt64) -> Bool {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (random >> 33) % 100 < percent
        }
        func make(_ from: Int64) -> Steps.Made {
            if roll(5) { return .retry }
            if roll(5) { return .full(seconds: 1) }
            let count = min(Int64(1 + Int(random >> 40) % 256), rows - from)
            return .batch(Batch(rows: Int(count), isLast: from + count == rows, first: from))
        }
        var batchesFrom: [Int64] = []
        var committed: Int64 = 0
        var steps = Steps(from: JobProgress(), preparesAhead: preparesAhead)
        var action = Steps.Action.check
        var turns = 0
        loop: while turns < 100_000 {
            turns += 1
            switch action {
            case .check: action = steps.next(.init())
            case let .make(from): action = steps.made(make(from))
            case let .commit(batch, makeAhead):
                if let makeAhead { steps.madeAhead(make(makeAhead)) }
                if roll(20) {
                    action = steps.committed(.failed("busy"))
                } else {
                    // The batch starts where the store's cursor is: no row skipped or twice.
                    #expect(batch.first == committed)
                    batchesFrom.append(batch.first)
                    committed += Int64(batch.rows)
                    action = steps.committed(.moved(JobProgress(cursor: committed)))
                }
            case .wait: action = steps.waited(.elapsed)
            case .pause: action = steps.paused()
            case let .finished(progress):
                #expect(progress.cursor == rows)
                break loop
            case let .end(state, failure):
                // Ten failures in a row end a job; at 20 % a commit, rare but possible.
                #expect(state == .failed && failure?.hasPrefix("a batch failed") == true)
                return
            case .letGo:
                Issue.record("let go")
                return
            }
        }
        #expect(committed == rows)
        #expect(batchesFrom == batchesFrom.sorted() && Set(batchesFrom).count == batchesFrom.count)
    }
}
