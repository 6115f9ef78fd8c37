import Foundation
import Synchronization

/// Log lines leave the loop threads through a bounded queue that one writer thread drains, so a
/// stalled standard output (a full pipe, a stopped log shipper) never stops a loop. When the
/// queue is full, new lines are dropped and counted (`cloak_log_lines_dropped_total`).
///
/// The writer wakes every ``interval`` and writes what has gathered in one `write`; a loop wakes
/// it early only when a quarter of the queue is used. Waking it for every line cost a futex call
/// and a context switch per request (measured: about 15 % of the CPU of `POST /validate`).
public final class LogQueue: Sendable {
    /// The lines waiting, and how many were dropped since start.
    private let state = Mutex<(lines: [String], dropped: Int, writing: Bool)>(([], 0, false))
    private let wake = DispatchSemaphore(value: 0)
    private let capacity: Int
    private let interval: Double
    private let write: @Sendable ([UInt8]) -> Void

    /// - Parameters:
    ///   - capacity: lines held at most; past it, lines are dropped.
    ///   - write: writes one batch of complete lines (it may block: it runs on the queue's thread).
    public init(capacity: Int = 16_384, interval: Double = 0.02, write: @escaping @Sendable ([UInt8]) -> Void) {
        self.capacity = capacity
        self.interval = interval
        self.write = write
        let thread = Thread { [self] in drain() }
        thread.name = "cloak-log"
        thread.start()
    }

    /// Queues a line (without its newline). Never blocks on the writer.
    public func push(_ line: String) {
        let wakeWriter = state.withLock { s -> Bool in
            guard s.lines.count < capacity else {
                s.dropped += 1
                return false
            }
            s.lines.append(line)
            return s.lines.count == capacity / 4
        }
        if wakeWriter { wake.signal() }
    }

    /// Lines dropped because the queue was full.
    public var dropped: Int { state.withLock { $0.dropped } }

    /// Waits until every queued line has been written (shutdown, tests); at most `timeout` seconds.
    public func flush(timeout: Double = 2) {
        let deadline = Date().addingTimeInterval(timeout)
        while state.withLock({ !$0.lines.isEmpty || $0.writing }) && Date() < deadline { usleep(1_000) }
    }

    private func drain() {
        while true {
            _ = wake.wait(timeout: .now() + interval)
            while true {
                let batch = state.withLock { s -> [String] in
                    let out = s.lines
                    s.lines.removeAll(keepingCapacity: true)
                    s.writing = !out.isEmpty
                    return out
                }
                if batch.isEmpty { break }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(batch.reduce(0) { $0 + $1.utf8.count + 1 })
                for line in batch {
                    bytes += line.utf8
                    bytes.append(0x0A)
                }
                write(bytes)
                state.withLock { $0.writing = false }
            }
        }
    }

    /// The process's standard output.
    public static let standardOutput = LogQueue { bytes in
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
