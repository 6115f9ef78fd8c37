import CLibevent
import Dispatch
import Foundation
import Testing

@testable import CloakHTTP

/// ``LoopBound``: loop-confined state checks its thread on every access, and traps off it.
struct LoopBoundTests {
    @Test func theLoopThreadReadsAndChangesItsState() {
        let thread = LoopThread()
        thread.enter()
        defer { thread.leave() }
        var bound = LoopBound([1], loop: thread)
        bound.value.append(2)
        #expect(bound.value == [1, 2])
    }

    @Test func stateIsFreeBeforeTheLoopRunsAndAfterItStops() {
        // The owner sets state up before the loop runs and tears it down after, on its own thread.
        let thread = LoopThread()
        let bound = LoopBound(7, loop: thread)
        #expect(onAnotherThread { bound.value } == 7)
        thread.enter()
        thread.leave()
        #expect(onAnotherThread { bound.value } == 7)
    }

    @Test func aThreadIsAnEventLoopsFromEnterToLeave() {
        let thread = LoopThread()
        #expect(!EventLoopThread.isCurrent)
        thread.enter()
        #expect(EventLoopThread.isCurrent)
        #expect(!onAnotherThread { EventLoopThread.isCurrent })
        thread.leave()
        #expect(!EventLoopThread.isCurrent)
    }

    @Test func stateWithoutALoopIsNotChecked() {
        // In process, outside a server: no loop, one caller at a time.
        let bound = LoopBound("in process", on: nil)
        #expect(onAnotherThread { bound.value } == "in process")
    }

    @Test func anAccessFromAnotherThreadWhileTheLoopRunsTraps() async {
        await #expect(processExitsWith: .failure) {
            let thread = LoopThread()
            thread.enter()
            let bound = LoopBound(1, loop: thread)
            _ = onAnotherThread { bound.value }
        }
    }

    #if DEBUG
        @Test func anAccessFromInsideItsOwnWithValueTraps() async {
            // What `@exclusivity(unchecked)` owners would otherwise miss (debug builds).
            await #expect(processExitsWith: .failure) {
                final class Owner: @unchecked Sendable {
                    @exclusivity(unchecked) var state = LoopBound([1], loop: .unconfined)
                }
                let owner = Owner()
                owner.state.withValue { _ in _ = owner.state.value }
            }
        }

        @Test func accessesOneAfterAnotherAreFine() {
            var bound = LoopBound([1], loop: .unconfined)
            bound.withValue { $0.append(2) }
            #expect(bound.withValue { $0 } == [1, 2])
            #expect(bound.value == [1, 2])
        }
    #endif
}

/// Runs `body` on a new thread and waits for its result.
private func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.value = body()
        done.signal()
    }.start()
    done.wait()
    return box.value!
}

/// A connection handed to another thread on purpose, to see it trap.
private struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Written by one thread, read by another after a semaphore: the semaphore orders them.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
