import Dispatch
import Foundation
import Testing

@testable import CloakHTTP
@testable import CloakService

/// ``ThreadWait``: a thread of its own waits for an answer given on another thread; an event
/// loop's thread never waits (debug builds trap).
struct ThreadWaitTests {
    @Test func theAnswerGivenOnAnotherThreadIsReturned() {
        let answer = ThreadWait<Int>.answer { done in
            Thread { done(42) }.start()
        }
        #expect(answer == 42)
    }

    @Test func workBeforeTheWaitRunsWhileTheAnswerComesAndAnAnswerGivenAtOnceIsKept() {
        let given = DispatchSemaphore(value: 0)
        let pending = ThreadWait<String> { done in
            Thread {
                given.wait()
                done("later")
            }
            .start()
        }
        given.signal()  // the caller's own work, then the answer
        #expect(pending.wait() == "later")
        #expect(pending.wait() == "later")
        #expect(ThreadWait<String>.answer { done in done("at once") } == "at once")
    }

    #if DEBUG
        @Test func anEventLoopsThreadThatWaitsTraps() async {
            await #expect(processExitsWith: .failure) {
                let loop = LoopThread()
                loop.enter()
                _ = ThreadWait<Int>.answer { done in done(1) }
            }
        }
    #endif
}
