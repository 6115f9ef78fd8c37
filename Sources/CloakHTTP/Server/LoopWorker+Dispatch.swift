import CloakCore

/// A parsed request becomes an ``HTTPRequest`` for the handler; its answer comes back to the
/// connection on this loop, by the connection's number (a connection closed meanwhile is gone,
/// and the answer is dropped).
extension LoopWorker {
    func dispatch(
        _ head: RequestHead, body: HTTPBody, route: (any Sendable)? = nil, violation: HTTPViolation?,
        on connection: ServerConnection, serial: UInt64
    ) {
        state.value.requestCounter &+= 1
        var requestID = RequestID.make(prefix: idPrefix, counter: state.value.requestCounter)
        if let given = head.header("X-Request-Id"), RequestID.isWellFormed(given) { requestID = given }
        let target = head.requestTarget
        var headers = head.headers
        if let authority = target.authority {
            // An absolute-form target names the host: its authority replaces Host (RFC 9112 3.2.2).
            headers.removeAll { $0.name.caseInsensitiveEquals("host") }
            headers.append(("Host", authority))
        }
        let method = HTTPMethod(rawValue: head.method) ?? .GET
        var request = HTTPRequest(
            method: method, path: target.path, query: target.query, headers: headers, requestID: requestID)
        request.content = body
        request.route = route
        request.violation = violation
        request.rawPath = target.rawPath
        request.remoteAddress = connection.clientAddress
        request.forwardingTrusted = !connection.namedNoClient
        request.loop = handle
        if let tunnel = connection.tunnel {
            request.proxyTarget = tunnel
        } else if let scheme = target.scheme, let host = target.host {
            request.proxyTarget = ProxyTarget(
                scheme: scheme, host: host, port: target.port > 0 ? target.port : (scheme == "https" ? 443 : 80))
        }
        if method == .CONNECT, tunnels != nil {
            return openTunnel(request, target: target, violation: violation, on: connection, serial: serial)
        }
        state.value.drain.dispatched()
        let id = connection.id
        let responder = HTTPResponder { [self, requestID] response in
            execute {
                self.state.value.drain.answered()
                var response = response
                response.headers.append(("X-Request-Id", requestID))
                self.state.value.connections[id]?.answer(response, for: serial)
            }
        }
        handler(request, responder)
    }
}
