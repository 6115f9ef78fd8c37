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

    /// State kept per loop by code above the server (the service's per-loop metric cells):
    /// one object per `owner`, made by `make` on first use. Nil off the loop's own thread, where
    /// the caller must use shared state instead. The objects live as long as the loop's worker.
    public func local<T: AnyObject>(for owner: AnyObject, make: () -> T) -> T? {
        guard worker.isOnLoop else { return nil }
        let key = ObjectIdentifier(owner)
        if let found = locals[key] { return unsafeDowncast(found, to: T.self) }
        let made = make()
        locals[key] = made
        return made
    }

    // Read and written on the loop's thread only (checked in local(for:make:)).
    private nonisolated(unsafe) var locals: [ObjectIdentifier: AnyObject] = [:]
}
