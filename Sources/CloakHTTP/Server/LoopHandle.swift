/// A way back to the event loop a request arrived on, from any thread.
///
/// Work that must touch the loop's connections (an upstream call, an answer) is handed to
/// ``execute(_:)``, which runs it on the loop's own thread, so they are never touched from
/// another one.
public final class LoopHandle: Sendable {
    // The worker outlives every request it hands out: it is freed only after its loop stopped.
    private unowned let worker: LoopWorker

    init(worker: LoopWorker) {
        self.worker = worker
    }

    /// The loop's thread, which ``LoopBound`` values check.
    var thread: LoopThread { worker.thread }

    /// Runs `work` on the loop's thread (at once when already there).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        worker.execute(work)
    }

    /// Sends a request upstream from this loop; `completion` runs on the loop's thread.
    /// Safe to call from any thread.
    public func send(
        _ request: UpstreamRequest, completion: @escaping @Sendable (Result<HTTPResponse, UpstreamError>) -> Void
    ) {
        worker.execute { [worker] in worker.upstream.send(request, completion: completion) }
    }

    /// State kept per loop by code above the server (the service's per-loop metric cells):
    /// one object per `owner`, made by `make` on first use. Nil off the loop's own thread, where
    /// the caller must use shared state instead. An object lives until its owner is gone and
    /// another owner takes its owner's address.
    public func local<T: AnyObject>(for owner: AnyObject, make: () -> T) -> T? {
        guard worker.isOnLoop else { return nil }
        let key = ObjectIdentifier(owner)
        // The same address with the owner gone is another owner: its object is made anew.
        // Through `withValue`: a `value` read here, not inlined, allocated a coroutine frame a request.
        if let found = worker.state.withValue({ $0.locals[key] }), found.owner === owner {
            return unsafeDowncast(found.value, to: T.self)
        }
        let made = make()
        worker.state.withValue { $0.locals[key] = Local(owner: owner, value: made) }
        return made
    }

    struct Local {
        weak var owner: AnyObject?
        let value: AnyObject
    }
}
