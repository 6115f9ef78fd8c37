import Foundation
import Synchronization

/// An event loop of its own thread with no listener: for callers in the same process that hand
/// requests to a handler directly and need a loop for what the handler does on one (an upstream
/// call). CloakTesting's in-process client runs requests on one.
///
/// ```swift
/// let loop = try DetachedLoop()
/// loop.handle.execute { /* on the loop's thread */ }
/// loop.shutdown()
/// ```
public final class DetachedLoop: Sendable {
    private let worker: LoopWorker
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)

    /// The way onto the loop (``LoopHandle/execute(_:)``), and what requests carry as their loop.
    public var handle: LoopHandle { worker.handle }

    public init() throws(HTTPServerError) {
        let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 1)
        worker = try LoopWorker(
            configuration: configuration,
            handler: { _, responder in
                responder.respond(HTTPResponse(status: 404))
            }, budget: ConnectionBudget(limit: 1), addressBudget: AddressBudget(limitPerAddress: 0), index: 0)
        let worker = self.worker, finished = self.finished
        let thread = Thread {
            worker.run()
            finished.signal()
        }
        thread.name = "cloak-detached-loop"
        thread.start()
    }

    /// Stops the loop (after what it is doing) and waits for its thread to end; again, nothing.
    public func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        worker.requestStop()
        finished.wait()
    }
}
