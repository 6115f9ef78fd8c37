import CLibevent
import Glibc

/// The loop's listener: bound before the thread starts, each accepted socket handed to
/// ``LoopWorker/accepted(_:peer:)``.
extension LoopWorker {
    /// Binds the listener with SO_REUSEPORT and TCP_NODELAY. Runs before the thread starts.
    func bind(port: Int) throws(HTTPServerError) {
        guard var address = Sockets.socketAddress(host: configuration.host, port: port) else {
            throw .init("cannot parse listen address \(configuration.host):\(port)")
        }
        let me = CallbackContext.unretained(self)
        guard
            let listener = Listener.bind(
                base, address: &address,
                { _, fd, address, _, arg in
                    let worker: LoopWorker = CallbackContext.object(arg!)
                    worker.accepted(fd, peer: Sockets.numeric(address) ?? "")
                }, me)
        else {
            throw .init("cannot listen on \(configuration.host):\(port): \(String(cString: strerror(errno)))")
        }
        Sockets.setNoDelay(listener.fd)  // accepted sockets inherit it: no Nagle delay on small replies
        // At the descriptor limit `accept` fails with EMFILE while the listening socket stays
        // readable: libevent would call it again at once, forever (100 % CPU). Instead the
        // listener pauses for 100 ms, during which closing connections free descriptors.
        listener.onAcceptError { _, arg in
            let worker: LoopWorker = CallbackContext.object(arg!)
            worker.pauseAccepting()
        }
        state.value.listener = listener
        self.port = Sockets.boundPort(listener.fd) ?? port
    }

    /// Stops accepting for good (a drain): the listening socket closes.
    func stopListening() {
        state.value.listener?.free()
        state.value.listener = nil
    }

    private func pauseAccepting() {
        guard let listener = state.value.listener else { return }
        listener.disable()
        if state.value.acceptPauseTimer == nil {
            state.value.acceptPauseTimer = LoopEvent.timer(
                base,
                { _, _, arg in
                    let worker: LoopWorker = CallbackContext.object(arg!)
                    worker.state.value.listener?.enable()
                }, CallbackContext.unretained(self))
        }
        state.value.acceptPauseTimer?.schedule(after: 0.1)
    }
}
