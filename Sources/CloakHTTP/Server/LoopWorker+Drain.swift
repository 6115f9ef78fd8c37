/// Draining: stop accepting, let the open connections finish, then end the loop (``DrainState``).
extension LoopWorker {
    var isDraining: Bool { state.value.drain.isDraining }

    func beginDrain() {
        guard state.value.drain.begin(now: Self.now(), timeoutSeconds: configuration.drainTimeoutSeconds) else {
            return
        }
        stopListening()
        // Idle keep-alive connections close now; the others after their answer (which says
        // `Connection: close`). A client still sending a request keeps its connection until
        // its answer.
        for connection in Array(state.value.connections.values) { connection.drain() }
        let timer = LoopEvent.repeating(
            base,
            { _, _, arg in
                let worker: LoopWorker = CallbackContext.object(arg!)
                worker.drainTick()
            }, CallbackContext.unretained(self))
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
