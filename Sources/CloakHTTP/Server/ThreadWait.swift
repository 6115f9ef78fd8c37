import Dispatch
import Synchronization

/// The one way a thread of its own (a job, a start-up step, a refresh at start) waits for an
/// answer another thread gives through a completion: the vault's thread, a loop's. Asked on an
/// event loop's thread it asserts (debug builds, the tests'): a loop that waits stops every
/// connection it serves, and one that waits for its own completion never wakes.
public final class ThreadWait<Answer: Sendable>: Sendable {
    private let answer = Mutex<Answer?>(nil)
    private let answered = DispatchSemaphore(value: 0)

    /// Starts the work: `start` is given the completion to call once, from any thread. The
    /// caller may do other work before ``wait()``.
    public init(_ start: (@escaping @Sendable (Answer) -> Void) -> Void) {
        start { [self] value in
            answer.withLock { $0 = value }
            answered.signal()
        }
    }

    /// The answer, once given (at once if it was).
    public func wait() -> Answer {
        assert(!EventLoopThread.isCurrent, "an event loop's thread waited for an answer")
        answered.wait()
        answered.signal()  // a second wait answers too
        return answer.withLock { $0! }
    }

    /// Starts the work and waits for its answer.
    public static func answer(_ start: (@escaping @Sendable (Answer) -> Void) -> Void) -> Answer {
        ThreadWait(start).wait()
    }
}
