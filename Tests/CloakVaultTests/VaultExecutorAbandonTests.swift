import CloakTesting
import Dispatch
import Synchronization
import Testing

@testable import CloakVault

/// Review defects IV (issue 55), item 9: with the disk full, a third of the reveals queued with
/// uploads failed: SQLite abandons the whole write transaction, and its read jobs went with it.
/// The reads of an abandoned batch run again on their own.
@Suite(.tags(.racy)) struct VaultExecutorAbandonTests {
    @Test func readsQueuedWithAWriteTheStoreAbandonedAreAnswered() throws {
        let held = try VaultBatchTraceTests.HeldExecutor()
        defer { held.executor.close() }
        let outcomes = Mutex<[String: Bool]>([:])
        let done = DispatchGroup()
        func submit(_ name: String, reads: Bool, _ body: @escaping (any AliasStore) throws -> Void) {
            done.enter()
            held.executor.submit(
                reads: reads, { store in try body(store) },
                completion: { result in
                    outcomes.withLock { $0[name] = (try? result.get()) != nil }
                    done.leave()
                })
        }
        submit("write-first", reads: false) { store in try store.setMetadata("kept", [1]) }
        submit("read-before", reads: true) { store in _ = try store.metadata("kept") }
        // A write the store gives up on by itself, as SQLite does on a full disk.
        submit("write-full", reads: false) { store in
            store.rollback()
            throw StoreError.full
        }
        submit("read-after", reads: true) { store in _ = try store.metadata("kept") }
        submit("write-after", reads: false) { store in try store.setMetadata("lost", [2]) }
        held.release()
        #expect(done.wait(timeout: .now() + 20) == .success)
        let result = outcomes.withLock { $0 }
        #expect(result["read-before"] == true && result["read-after"] == true, "\(result)")
        #expect(result["write-full"] == false && result["write-first"] == false && result["write-after"] == false)
    }
}
