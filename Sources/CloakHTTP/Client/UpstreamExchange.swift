import Foundation

/// One request in flight: its ``ExchangeState``, deadline and completion.
final class Exchange {
    let request: UpstreamRequest
    private var completion: ((Result<HTTPResponse, UpstreamError>) -> Void)? {
        _read { yield state.value.completion }
        _modify { yield &state.value.completion }
    }
    private(set) var machine: ExchangeState {
        _read { yield state.value.machine }
        _modify { yield &state.value.machine }
    }
    var lastError: UpstreamError? {
        _read { yield state.value.lastError }
        _modify { yield &state.value.lastError }
    }
    var timer: LoopEvent? {
        _read { yield state.value.timer }
        _modify { yield &state.value.timer }
    }
    /// The evhttp request while it is on a connection.
    var evRequest: EvRequest? {
        _read { yield state.value.evRequest }
        _modify { yield &state.value.evRequest }
    }
    var connection: UpstreamConnection? {
        _read { yield state.value.connection }
        _modify { yield &state.value.connection }
    }
    /// Whether the retain handed to evhttp with the request has been given back.
    private var contextReleased: Bool {
        _read { yield state.value.contextReleased }
        _modify { yield &state.value.contextReleased }
    }

    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var completion: ((Result<HTTPResponse, UpstreamError>) -> Void)?
        var machine: ExchangeState = ExchangeState()
        var lastError: UpstreamError?
        var timer: LoopEvent?
        var evRequest: EvRequest?
        weak var connection: UpstreamConnection?
        var contextReleased: Bool = true
    }

    @exclusivity(unchecked) private var state: LoopBound<State>

    init(
        request: UpstreamRequest, thread: LoopThread,
        completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void
    ) {
        self.request = request
        self.state = LoopBound(State(completion: completion), loop: thread)
    }

    var isDone: Bool { machine.isFinished }

    /// Feeds the state machine; the caller carries out the action.
    func handle(_ event: ExchangeState.Event) -> ExchangeState.Action { machine.handle(event) }

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
