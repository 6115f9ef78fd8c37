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
}
