import Foundation
import Synchronization

/// Log lines leave the loop threads through a bounded queue that one writer thread drains, so a
/// stalled standard output (a full pipe, a stopped log shipper) never stops a loop. When the
/// queue is full, new lines are dropped and counted (`cloak_log_lines_dropped_total`).
///
/// The writer wakes every ``interval`` and writes what has gathered in one `write`; a loop wakes
/// it early only when a quarter of the queue is used. Waking it for every line cost a futex call
/// and a context switch per request (measured: about 15 % of the CPU of `POST /validate`).
package final class LogQueue: Sendable {
    /// Lines waiting, each followed by its newline, in one buffer that the writer swaps for an
    /// empty one of the same capacity: queuing a line allocates nothing once the buffers have grown.
    private struct Pending {
        var bytes: [UInt8] = []
        var lines = 0
        var dropped = 0
        var writing = false
    }

    private let state = Mutex(Pending())
    private let wake = DispatchSemaphore(value: 0)
    private let capacity: Int
    private let byteCapacity: Int
    private let interval: Double
    private let write: @Sendable ([UInt8]) -> Void

    /// - Parameters:
    ///   - capacity: lines held at most; past it, lines are dropped.
    ///   - byteCapacity: bytes held at most (long lines while the output is stalled); past it,
    ///     lines are dropped too.
    ///   - write: writes one batch of complete lines (it may block: it runs on the queue's thread).
    package init(
        capacity: Int = 16_384, byteCapacity: Int = 8 << 20, interval: Double = 0.02,
        write: @escaping @Sendable ([UInt8]) -> Void
    ) {
        self.capacity = capacity
        self.byteCapacity = byteCapacity
        self.interval = interval
        self.write = write
        let thread = Thread { [self] in drain() }
        thread.name = "cloak-log"
        thread.start()
    }

    /// Queues a line (its UTF-8 bytes, without the newline). Never blocks on the writer.
    package func push(_ line: UnsafeBufferPointer<UInt8>) {
        let wakeWriter = state.withLock { s -> Bool in
            let before = s.bytes.count
            guard s.lines < capacity, before + line.count + 1 <= byteCapacity else {
                s.dropped += 1
                return false
            }
            s.bytes.append(contentsOf: line)
            s.bytes.append(0x0A)
            s.lines += 1
            return s.lines == capacity / 4 || (before < byteCapacity / 4 && s.bytes.count >= byteCapacity / 4)
        }
        if wakeWriter { wake.signal() }
    }

    /// Queues a line (without its newline).
    package func push(_ line: String) {
        var line = line
        line.withUTF8 { push($0) }
    }

    /// Lines dropped because the queue was full.
    package var dropped: Int { state.withLock { $0.dropped } }

    /// Waits until every queued line has been written (shutdown, tests); at most `timeout` seconds.
    package func flush(timeout: Double = 2) {
        let deadline = Date().addingTimeInterval(timeout)
        while state.withLock({ $0.lines > 0 || $0.writing }) && Date() < deadline { usleep(1_000) }
    }

    private func drain() {
        var batch: [UInt8] = []
        while true {
            _ = wake.wait(timeout: .now() + interval)
            while true {
                let taken = state.withLock { s -> Bool in
                    guard s.lines > 0 else { return false }
                    swap(&s.bytes, &batch)
                    s.lines = 0
                    s.writing = true
                    return true
                }
                if !taken { break }
                write(batch)
                // A burst (standard output stalled) does not keep its megabytes for good.
                batch.removeAll(keepingCapacity: batch.capacity <= 1 << 20)
                state.withLock { $0.writing = false }
            }
        }
    }

    /// The process's standard output.
    package static let standardOutput = LogQueue { bytes in
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(1, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
