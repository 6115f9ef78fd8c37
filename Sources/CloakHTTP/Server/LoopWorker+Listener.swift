import Glibc

/// The loop's listener and evhttp's settings for it.
extension LoopWorker {
    /// Limits, timeouts, methods and the callbacks, the same for every evhttp of the loop.
    func configure(_ http: EvHTTPServer) {
        http.configure(
            maxBodyBytes: Int(configuration.evhttpBodyCap), maxHeaderBytes: Int(configuration.maxHeaderBytes),
            idleTimeoutSeconds: Int(configuration.idleTimeoutSeconds))
        let me = Unmanaged.passUnretained(self).toOpaque()
        http.onRequest(
            { req, arg in
                guard let req, let arg else { return }
                Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().handle(EvRequest(raw: req))
            }, me)
        // Every accepted connection, plain or TLS, gets its bufferevent from here: the one
        // moment a connection is seen before any of its bytes is read.
        http.onAccept(
            { base, arg in
                Unmanaged<LoopWorker>.fromOpaque(arg!).takeUnretainedValue().makeBufferevent(EventBase(raw: base!))?.raw
            }, me)
    }

    /// Binds the listener with SO_REUSEPORT and TCP_NODELAY. Runs before the thread starts.
    func bind(port: Int) throws(HTTPServerError) {
        guard var address = Sockets.socketAddress(host: configuration.host, port: port) else {
            throw .init("cannot parse listen address \(configuration.host):\(port)")
        }
        guard let listener = Listener.bind(base, address: &address) else {
            throw .init("cannot listen on \(configuration.host):\(port): \(String(cString: strerror(errno)))")
        }
        Sockets.setNoDelay(listener.fd)  // accepted sockets inherit it: no Nagle delay on small replies
        watchAcceptErrors(listener)
        guard let bound = http.serve(listener) else {
            listener.free()
            throw .init("evhttp_bind_listener failed")
        }
        state.value.bound = bound
        self.port = Sockets.boundPort(listener.fd) ?? port
    }
}
