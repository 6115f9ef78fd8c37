import COpenSSL
import Foundation

/// The forward-proxy door: CONNECT tunnels with TLS interception. Loop thread only.
///
/// Every connection of the door reaches evhttp through a ``ConnectionFilter``. evhttp parses the
/// CONNECT (with the listener's limits) and the ``TunnelAuthorizer`` decides it. A granted
/// tunnel is answered `200` through evhttp, which then keeps reading the same connection (a
/// CONNECT is never "close"): from the client's next byte the filter runs TLS with the host's
/// leaf certificate, so evhttp parses the requests inside with the same limits and deadlines
/// as any other, and they carry the tunnel's ``ProxyTarget``.
extension LoopWorker {
    func openTunnel(_ req: EvRequest, _ request: HTTPRequest, evcon: EvConnection) {
        guard let tunnels else { preconditionFailure("a CONNECT reached a door without tunnels") }
        guard let connection = state.value.connections[evcon.raw], let filter = connection.connectionFilter,
            connection.tunnel == nil
        else {
            return answerConnect(req, tunnels.malformed("a CONNECT inside a tunnel is not served"))
        }
        if request.violation != nil {
            // A CONNECT that broke framing (or any other rule of the request): refused and closed.
            var refusal = tunnels.malformed("the CONNECT request is malformed")
            refusal.headers.append(("Connection", "close"))
            return answerConnect(req, refusal)
        }
        guard let authority = req.authority else {
            return answerConnect(req, tunnels.malformed("CONNECT needs host:port"))
        }
        let host = authority.host, port = authority.port
        switch tunnels.decide(request, host, port) {
        case let .refuse(response):
            answerConnect(req, response)
        case let .open(grant, certificate):
            // Bytes after the CONNECT before its answer would be read as plain HTTP: a client that
            // does not wait for the 200 gets no tunnel.
            guard let input = connection.bufferevent.input, input.count == 0,
                filter.grant(certificate.context)
            else {
                return answerConnect(req, tunnels.malformed("send nothing after CONNECT before its answer"))
            }
            connection.tunnel = ProxyTarget(scheme: "https", host: host, port: port, tunnelGrant: grant)
            // Python's http.client sends `CONNECT … HTTP/1.0`, after whose answer evhttp would
            // close: the tunnel outlives the CONNECT whatever its version.
            LoopWorker.keepAlive(req)
            restartClockWhenWritten(req)
            req.reply(200, reason: "Connection established")
        }
    }

    /// Answers a CONNECT that opens nothing. evhttp writes no Content-Length for an answer to a
    /// CONNECT, so it is set here: the client can read the body and retry on the connection
    /// (with credentials after a 407).
    private func answerConnect(_ req: EvRequest, _ response: HTTPResponse) {
        var response = response
        response.headers.removeAll { $0.name.caseInsensitiveEquals("Content-Length") }
        response.headers.append(("Content-Length", String(response.body.count)))
        restartClockWhenWritten(req)
        send(response, to: req)
    }
}
