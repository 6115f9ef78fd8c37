import CloakService
import Foundation
import Synchronization
import Testing

/// Defect 12: a stalled log writer never blocks the threads that log.
@Suite struct LogQueueTests {
    @Test(.timeLimit(.minutes(1))) func aStalledWriterDropsLinesInsteadOfBlocking() throws {
        let gate = DispatchSemaphore(value: 0)
        let written = Mutex<[UInt8]>([])
        let queue = LogQueue(capacity: 100) { bytes in
            gate.wait()  // standard output is stalled until the gate opens
            written.withLock { $0 += bytes }
        }
        // 1,000 lines against a writer that does not move: every push returns (no hang).
        for i in 0..<1_000 { queue.push("line \(i)") }
        #expect(queue.dropped >= 800)
        gate.signal()
        for _ in 0..<10 { gate.signal() }
        queue.flush(timeout: 10)
        let text = String(decoding: written.withLock { $0 }, as: UTF8.self)
        #expect(text.hasPrefix("line 0\n"))
        #expect(text.split(separator: "\n").count + queue.dropped == 1_000)
    }

    /// Long lines against a stalled writer are bounded by bytes too, not only by line count.
    @Test(.timeLimit(.minutes(1))) func aStalledWriterHoldsAtMostItsByteCapacity() throws {
        let gate = DispatchSemaphore(value: 0)
        let written = Mutex<[UInt8]>([])
        let queue = LogQueue(capacity: 1_000, byteCapacity: 10_000) { bytes in
            gate.wait()
            written.withLock { $0 += bytes }
        }
        let line = String(repeating: "x", count: 999)  // 1,000 bytes with its newline
        for _ in 0..<100 { queue.push(line) }
        // At most ten lines wait (one more may be in the writer's hands): the rest are dropped.
        #expect(queue.dropped >= 80)
        for _ in 0..<20 { gate.signal() }
        queue.flush(timeout: 10)
        let lines = written.withLock { $0 }.split(separator: 0x0A)
        #expect(lines.allSatisfy { $0.count == 999 })
        #expect(lines.count + queue.dropped == 100)
    }
}
