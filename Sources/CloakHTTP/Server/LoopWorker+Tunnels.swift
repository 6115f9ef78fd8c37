import COpenSSL

/// The forward-proxy door: CONNECT tunnels with TLS interception. Loop thread only.
///
/// The ``TunnelAuthorizer`` decides each CONNECT. A granted tunnel is answered `200`; once that
/// answer has left, the connection's transport turns to TLS with the host's leaf certificate and
/// a fresh parser reads the requests inside, with the listener's limits and deadlines; they carry
/// the tunnel's ``ProxyTarget``. A refused CONNECT is answered and its connection closed.
extension LoopWorker {
    func openTunnel(
        _ request: HTTPRequest, target: RequestTarget, violation: HTTPViolation?, on connection: ServerConnection,
        serial: UInt64
    ) {
        guard let tunnels else { preconditionFailure("a CONNECT reached a door without tunnels") }
        let answer = { (response: HTTPResponse) in connection.answer(response, for: serial) }
        guard connection.tunnel == nil else {
            return answer(tunnels.malformed("a CONNECT inside a tunnel is not served"))
        }
        if violation != nil {
            // A CONNECT that broke a rule of the request: refused and closed.
            return answer(tunnels.malformed("the CONNECT request is malformed"))
        }
        guard let host = target.host, target.port > 0 else {
            return answer(tunnels.malformed("CONNECT needs host:port"))
        }
        switch tunnels.decide(request, host, target.port) {
        case let .refuse(response):
            answer(response)
        case let .open(grant, certificate):
            // Bytes after the CONNECT before its answer would be read as plain HTTP: a client that
            // does not wait for the 200 gets no tunnel.
            guard !connection.hasUnparsedInput else {
                return answer(tunnels.malformed("send nothing after CONNECT before its answer"))
            }
            let tunnel = ProxyTarget(scheme: "https", host: host, port: target.port, tunnelGrant: grant)
            connection.answer(HTTPResponse(status: 200), for: serial, tunnel: (tunnel, certificate))
        }
    }
}
