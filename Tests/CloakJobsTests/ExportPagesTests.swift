import CloakVault
import Foundation
import Synchronization
import Testing

@testable import CloakJobs

/// The hand-over between an export's reader and GnuPG's read callback (``ExportPages``): a page
/// ahead on an embedded store; on a database server, a page only when the callback asks.
struct ExportPagesTests {
    static func page(_ number: Int) -> ExportPages.Chunk { .values(ExportPage(missing: number)) }

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .sequentiallyConsistent) }
        var count: Int { value.load(ordering: .sequentiallyConsistent) }
    }

    /// Starts a reader that puts `count` pages and then finishes; `returned` counts the puts
    /// that came back.
    static func reader(_ queue: ExportPages, count: Int, returned: Counter) -> DispatchSemaphore {
        let ended = DispatchSemaphore(value: 0)
        Thread {
            do {
                for number in 1...count {
                    try queue.put(page(number))
                    returned.add()
                }
                queue.finish(nil, digest: "d")
            } catch {
                queue.finish(error, digest: nil)
            }
            ended.signal()
        }.start()
        return ended
    }

    @Test func withoutAheadTheReaderWaitsUntilTheNextPageIsAsked() throws {
        let queue = ExportPages(ahead: false)
        let returned = Counter()
        let ended = Self.reader(queue, count: 3, returned: returned)
        for number in 1...3 {
            let page = try #require(try queue.take(tick: {}))
            #expect(page.missing == number)
            // The page was handed over, but the reader reads no further until the next take
            // (its put has not returned).
            #expect(returned.count == number - 1)
        }
        #expect(try queue.take(tick: {}) == nil)
        ended.wait()
        #expect(returned.count == 3)
        #expect(queue.digest == "d")
    }

    @Test func aheadTheReaderKeepsUpToTwoPagesWaiting() throws {
        let queue = ExportPages(ahead: true)
        let returned = Counter()
        let ended = Self.reader(queue, count: 4, returned: returned)
        // Two puts come back without a take (the third waits for room: a reader that did not
        // would run on to four, and the poll would time out).
        try Self.poll { returned.count == 2 }
        var taken: [Int] = []
        while let page = try queue.take(tick: {}) { taken.append(page.missing) }
        #expect(taken == [1, 2, 3, 4])
        ended.wait()
    }

    @Test func aCancelledExportReleasesAWaitingReader() throws {
        let queue = ExportPages(ahead: false)
        let returned = Counter()
        let ended = Self.reader(queue, count: 3, returned: returned)
        #expect(try queue.take(tick: {})?.missing == 1)
        queue.cancel()
        ended.wait()
        #expect(returned.count == 0)
        #expect(queue.failure is CancellationError)
    }

    /// Polls `condition` until it holds (or fails the test after `timeout` seconds).
    static func poll(timeout: Double = 60, _ condition: () throws -> Bool) throws {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return }
            usleep(50_000)
        }
        Issue.record("the condition did not hold within \(timeout) s")
    }
}
