import CloakCore
import CloakTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CloakVault

/// The executor's side of a batch's span (issue 44, item 8): a batch holding traced jobs asks
/// the first trace for one span serving all of them, and ends it with the batch's jobs, the
/// store's statements and rows, and its failures; a batch with none starts nothing. No tracing
/// library here: the traces are recorders.
@Suite struct VaultBatchTraceTests {
    /// An executor whose first job holds it until `release`, so that what is submitted meanwhile
    /// queues into one batch.
    final class HeldExecutor {
        let executor: VaultExecutor
        private let gate = DispatchSemaphore(value: 0)

        init() throws {
            executor = VaultExecutor(
                store: try SQLiteAliasStore(path: ":memory:"), maintenanceInterval: 3600, maintenance: { _ in })
            let started = DispatchSemaphore(value: 0)
            let gate = self.gate
            executor.submit(
                { (_: any AliasStore) -> Void in
                    started.signal()
                    gate.wait()
                }, completion: { _ in })
            #expect(started.wait(timeout: .now() + 10) == .success)
        }

        func release() { gate.signal() }
    }

    @Test func aBatchOfTracedJobsIsOneSpanServingEachEndedWithItsCounts() throws {
        let held = try HeldExecutor()
        defer { held.executor.close() }
        let recorder = BatchRecorder()
        let done = DispatchGroup()
        for id in 1...3 {
            done.enter()
            VaultTracing.current.withValue(RecordingTrace(id: id, recorder: recorder)) {
                held.executor.submit(
                    { store in
                        try store.setMetadata("probe-\(id)", [1])
                        return try store.metadata("probe-\(id)")
                    }, completion: { _ in done.leave() })
            }
        }
        // In the same batch: a job no trace was bound for, and one that fails as a request does.
        done.enter()
        held.executor.submit({ _ in 0 }, completion: { _ in done.leave() })
        done.enter()
        held.executor.submit(
            { (_: any AliasStore) throws -> Int in throw VaultError.notFound }, completion: { _ in done.leave() })
        held.release()
        #expect(done.wait(timeout: .now() + 10) == .success)
        // The span ends once the batch has delivered its completions.
        #expect(Poll.until(seconds: 5) { recorder.batches.allSatisfy { $0.summary != nil } })

        let batches = recorder.batches
        #expect(batches.count == 1, "\(batches)")
        #expect(batches.first?.serving == [1, 2, 3])
        let summary = try #require(batches.first?.summary)
        #expect(summary.jobs == 5 && summary.failedJobs == 1 && !summary.storeFailed && !summary.readsOnly)
        // Two statements per traced job, and at least BEGIN and COMMIT.
        #expect(summary.statements >= 3 * 2 + 2, "\(summary)")
        // Each traced job wrote a row and read it back.
        #expect(summary.rows >= 6, "\(summary)")
    }

    @Test func aStoreFailureMarksTheBatchAndAReadingBatchSaysSo() throws {
        let held = try HeldExecutor()
        defer { held.executor.close() }
        let recorder = BatchRecorder()
        let done = DispatchGroup()
        done.enter()
        VaultTracing.current.withValue(RecordingTrace(id: 1, recorder: recorder)) {
            held.executor.submit(
                { (_: any AliasStore) throws -> Int in throw StoreError.unavailable("disk I/O") },
                completion: { _ in done.leave() })
        }
        held.release()
        #expect(done.wait(timeout: .now() + 10) == .success)
        // Now idle: a batch of reads alone.
        done.enter()
        VaultTracing.current.withValue(RecordingTrace(id: 2, recorder: recorder)) {
            held.executor.submit(
                reads: true, { store in try store.metadata("nothing") }, completion: { _ in done.leave() })
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(Poll.until(seconds: 5) { recorder.batches.count == 2 && recorder.batches[1].summary != nil })

        let batches = recorder.batches
        #expect(batches.map(\.serving) == [[1], [2]])
        #expect(batches.first?.summary?.storeFailed == true && batches.first?.summary?.failedJobs == 1)
        #expect(batches.last?.summary?.readsOnly == true && batches.last?.summary?.storeFailed == false)
    }

    @Test func aJobSubmittedOutsideTheBindingIsUntracedAndItsBatchStartsNoSpan() throws {
        let held = try HeldExecutor()
        defer { held.executor.close() }
        let recorder = BatchRecorder()
        let done = DispatchGroup()
        done.enter()
        VaultTracing.current.withValue(RecordingTrace(id: 1, recorder: recorder)) {
            held.executor.submit({ _ in 1 }, completion: { _ in done.leave() })
        }
        held.release()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(Poll.until(seconds: 5) { recorder.batches.first?.summary != nil })
        // After the binding's end: a batch of untraced jobs asks no trace for a span.
        for _ in 0..<3 {
            done.enter()
            held.executor.submit({ _ in 2 }, completion: { _ in done.leave() })
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        // A batch asks for its span before it runs its jobs: by their completions it has.
        #expect(recorder.batches.map(\.serving) == [[1]])
    }

    /// Through the vault's own API: the trace bound around `createAliases` reaches its job.
    @Test func aTraceBoundAroundAVaultCallReachesItsBatch() throws {
        try withVaultHarness { harness in
            let vault = try harness.openVault()
            let recorder = BatchRecorder()
            let request = AliasRequest(value: "4111111111111111", format: .UUID, storage: .persistent)
            let created: Result<[RevealedRecord], VaultError> = try waitForCompletion("createAliases") { done in
                VaultTracing.current.withValue(RecordingTrace(id: 7, recorder: recorder)) {
                    vault.createAliases([request], completion: done)
                }
            }
            #expect((try? created.get())?.count == 1)
            // The span ends once the batch has delivered its completions.
            #expect(Poll.until(seconds: 5) { recorder.batches.first?.summary != nil })
            #expect(recorder.batches.map(\.serving) == [[7]])
            let summary = try #require(recorder.batches.first?.summary)
            #expect(summary.jobs == 1 && summary.rows >= 2, "the record and its alias: \(summary)")
        }
    }
}

/// What the executor asked of the traces: each batch's traces and its summary once ended.
final class BatchRecorder: Sendable {
    struct Batch: Sendable, CustomStringConvertible {
        var serving: [Int]
        var summary: VaultBatchSummary?
        var description: String { "\(serving) \(summary.map { "\($0)" } ?? "not ended")" }
    }

    private let recorded = Mutex<[Batch]>([])

    var batches: [Batch] { recorded.withLock { $0 } }

    func started(serving: [Int]) -> Int {
        recorded.withLock {
            $0.append(Batch(serving: serving))
            return $0.count - 1
        }
    }

    func ended(_ index: Int, _ summary: VaultBatchSummary) {
        recorded.withLock { $0[index].summary = summary }
    }
}

struct RecordingTrace: VaultJobTrace {
    let id: Int
    let recorder: BatchRecorder

    func startBatch(serving jobs: [any VaultJobTrace]) -> any VaultBatchTrace {
        let serving = jobs.compactMap { ($0 as? RecordingTrace)?.id }
        return RecordingBatch(index: recorder.started(serving: serving), recorder: recorder)
    }
}

struct RecordingBatch: VaultBatchTrace {
    let index: Int
    let recorder: BatchRecorder

    func end(_ summary: VaultBatchSummary) { recorder.ended(index, summary) }
}
