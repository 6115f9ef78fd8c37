import Foundation

/// Runs `body(0..<count)` on a thread each and returns when all have finished: every call is in
/// flight together (`DispatchQueue.concurrentPerform` would run only as many as there are cores,
/// which on a small machine never fills a connection pool).
package func allAtOnce(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for i in 0..<count {
        done.enter()
        Thread {
            body(i)
            done.leave()
        }.start()
    }
    done.wait()
}
