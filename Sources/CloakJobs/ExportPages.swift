import CloakVault
import Foundation

/// Pages handed from the thread that reads them to GnuPG's read callback. `ahead`: at most two
/// waiting, so the reader stays a page ahead and no further. Otherwise the reader reads a page
/// only once the callback asks for one (``put(_:)`` returns then): the reader and the callback
/// take turns (the first page is read before any ask, and the `gpg` process may still be
/// working through what it was given).
package final class ExportPages: @unchecked Sendable {
    /// A page of either layout.
    package enum Chunk {
        case values(ExportPage)
        case rows(ExportGroupPage)

        var count: Int {
            switch self {
            case let .values(page): page.rows.count
            case let .rows(page): page.rows.count
            }
        }

        /// Listed aliases that found nothing (a value layout's).
        var missing: Int {
            if case let .values(page) = self { return page.missing }
            return 0
        }
    }

    private let lock = NSCondition()
    private let ahead: Bool
    private var pages: [Chunk] = []
    /// The callback waits for a page the reader has not read yet (only without `ahead`).
    private var asked = false
    private var done = false
    private var cancelled = false
    private var failed: (any Error)?
    private var walked: String?

    /// The reader's error, once it ended with one.
    var failure: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return failed
    }

    init(ahead: Bool) {
        self.ahead = ahead
    }

    func put(_ page: Chunk) throws {
        lock.lock()
        defer { lock.unlock() }
        while ahead && pages.count >= 2 && !cancelled { lock.wait() }
        if cancelled { throw CancellationError() }
        pages.append(page)
        asked = false
        lock.broadcast()
        // Not ahead: the next page is read when the callback, done with this one, asks.
        while !ahead && !asked && !cancelled { lock.wait() }
        if cancelled { throw CancellationError() }
    }

    /// The digest of the rows the reader read, once it ended without an error.
    var digest: String? {
        lock.lock()
        defer { lock.unlock() }
        return walked
    }

    func finish(_ error: (any Error)?, digest: String?) {
        lock.lock()
        done = true
        failed = error
        walked = digest
        lock.broadcast()
        lock.unlock()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        lock.broadcast()
        lock.unlock()
    }

    /// The next page; nil at the end; the reader's error when it failed. `tick` runs every
    /// second while it waits (the lease is renewed however slow a page is).
    func take(tick: () throws -> Void) throws -> Chunk? {
        lock.lock()
        defer { lock.unlock() }
        while pages.isEmpty && !done {
            if !asked {
                asked = true
                lock.broadcast()
            }
            if !lock.wait(until: Date().addingTimeInterval(1)) {
                lock.unlock()
                defer { lock.lock() }
                try tick()
            }
        }
        if !pages.isEmpty {
            let page = pages.removeFirst()
            lock.broadcast()
            return page
        }
        if let failed { throw failed }
        return nil
    }
}
