import Synchronization

/// Answers one request, exactly once, from any thread.
///
/// On the request's own loop thread the answer is written at once; from any other thread it is
/// queued and the loop is woken with `event_active`, so a connection is only ever touched on its loop.
/// A second call is ignored. A responder that is never called leaks its request: every code
/// path of a deferred handler must answer.
public final class HTTPResponder: Sendable {
    private let answered = Atomic<Bool>(false)
    private let deliver: @Sendable (HTTPResponse) -> Void

    init(deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.deliver = deliver
    }

    /// A responder that hands the response to `body` (tests and in-process callers).
    public static func collecting(_ body: @escaping @Sendable (HTTPResponse) -> Void) -> HTTPResponder {
        HTTPResponder(deliver: body)
    }

    public func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        deliver(response)
    }

}
