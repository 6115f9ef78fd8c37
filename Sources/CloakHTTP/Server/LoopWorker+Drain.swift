/// Draining: stop accepting, let the open connections finish, then end the loop (``DrainState``).
extension LoopWorker {
    var isDraining: Bool { state.value.drain.isDraining }

    func beginDrain() {
        guard state.value.drain.begin(now: Self.now(), timeoutSeconds: configuration.drainTimeoutSeconds) else {
            return
        }
        if let bound = state.value.bound {
            forgetListener()
            http.stopAccepting(bound)
            state.value.bound = nil
        }
        // Idle keep-alive connections close after half a second of silence; a client still
        // sending a request keeps its connection for as long as it keeps sending.
        for connection in state.value.connections.keys { EvConnection(raw: connection).setTimeout(seconds: 0.5) }
        let timer = LoopEvent.repeating(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().drainTick()
            }, Unmanaged.passUnretained(self).toOpaque())
        state.value.drainTimer = timer
        timer?.schedule(after: 0.02)
        drainTick()
    }

    private func drainTick() {
        if state.value.drain.mayStop(openConnections: state.value.connections.count, now: Self.now()) {
            base.breakLoop()
        }
    }
}
