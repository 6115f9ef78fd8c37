import Foundation

/// One request in flight: its ``ExchangeState``, deadline and completion.
final class Exchange {
    let request: UpstreamRequest
    /// The request's bytes (``MessageWriter/request(_:)``), made before it was queued.
    let wire: [UInt8]
    /// What it changes, one ``LoopBound`` value: loop thread only, checked on every access.
    struct State {
        var completion: ((Result<HTTPResponse, UpstreamError>) -> Void)?
        var machine: ExchangeState = ExchangeState()
        var timer: LoopEvent?
        weak var connection: UpstreamConnection?
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init(
        request: UpstreamRequest, wire: [UInt8], thread: LoopThread,
        completion: @escaping (Result<HTTPResponse, UpstreamError>) -> Void
    ) {
        self.request = request
        self.wire = wire
        let machine = ExchangeState(streamedLength: request.content.streamedLength)
        self.state = LoopBound(State(completion: completion, machine: machine), loop: thread)
    }

    var isDone: Bool { state.machine.isFinished }

    /// Feeds the state machine; the caller carries out the action.
    func handle(_ event: ExchangeState.Event) -> ExchangeState.Action { state.machine.handle(event) }

    /// Runs the completion (once) and frees the deadline timer.
    func deliver(_ result: Result<HTTPResponse, UpstreamError>) {
        // One checked access: the fields through their key paths were projected at run time.
        let completion = state.withValue { state in
            state.timer?.free()
            state.timer = nil
            defer { state.completion = nil }
            return state.completion
        }
        completion?(result)
    }
}
