/// A way back to the event loop a request arrived on, from any thread.
///
/// Work that must touch evhttp (an upstream call, an answer) is handed to ``execute(_:)``,
/// which runs it on the loop's own thread, so evhttp is never called from another one.
public final class LoopHandle: Sendable {
    // The worker outlives every request it hands out: it is freed only after its loop stopped.
    private unowned let worker: LoopWorker

    init(worker: LoopWorker) {
        self.worker = worker
    }

    /// Runs `work` on the loop's thread (at once when already there).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        worker.execute(work)
    }

    /// Sends a request upstream from this loop; `completion` runs on the loop's thread.
    /// Safe to call from any thread.
    public func send(_ request: UpstreamRequest, completion: @escaping @Sendable (Result<HTTPResponse, UpstreamError>) -> Void) {
        worker.execute { [worker] in worker.upstream.send(request, completion: completion) }
    }
}
