import Foundation

/// One request in flight: its ``ExchangeState``, deadline and completion.
final class Exchange {
    let request: UpstreamRequest
    private var completion: ((Result<HTTPResponse, UpstreamError>) -> Void)?
    private(set) var state = ExchangeState()
    var lastError: UpstreamError?
    var timer: LoopEvent?
    /// The evhttp request while it is on a connection.
    var evRequest: EvRequest?
    weak var connection: UpstreamConnection?
    /// Whether the retain handed to evhttp with the request has been given back.
    private var contextReleased = true

    init(request: UpstreamRequest, completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    var isDone: Bool { state.isFinished }

    /// Feeds the state machine; the caller carries out the action.
    func handle(_ event: ExchangeState.Event) -> ExchangeState.Action { state.handle(event) }

    /// The context for the evhttp request's callbacks: retained until ``releaseContext()``.
    func retainContext() -> UnsafeMutableRawPointer {
        contextReleased = false
        return CallbackContext.retained(self)
    }

    /// Gives back the retain taken for the evhttp request's context (once).
    func releaseContext() {
        guard !contextReleased else { return }
        contextReleased = true
        Unmanaged.passUnretained(self).release()
    }

    /// Runs the completion (once) and frees the deadline timer.
    func deliver(_ result: Result<HTTPResponse, UpstreamError>) {
        timer?.free()
        timer = nil
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }
}
