import Foundation

/// Reading: evhttp's parsed request becomes an ``HTTPRequest`` for the handler, judged first by
/// the rules evhttp does not apply (strict framing, header names, conflicting lengths, the body
/// limit).
extension LoopWorker {
    func handle(_ req: EvRequest) {
        var violation: HTTPViolation?
        var closeAfter = isDraining
        let evcon = req.connection
        let connection = evcon.flatMap { state.value.connections[$0.raw] }
        connection?.dispatched(now: Self.now())

        guard let method = req.method else { return req.replyError(501) }
        let target = req.target
        let headers = req.inputHeaders?.all ?? []
        if let broken = connection?.violationOfCurrentRequest {
            // Judged on the raw bytes before evhttp read them (ServerConnection.framing).
            violation = .malformedFraming(reason: broken.description)
            closeAfter = true
        } else if headers.contains(where: { !HTTPSyntax.isToken($0.name) }) {
            // `Name :` or a name with other bytes: RFC 9112 says refuse. evhttp kept the space in
            // the name, so its own framing may disagree with a peer's: close after the answer.
            violation = .invalidHeaderName
            closeAfter = true
        }
        if violation == nil {
            // Compared only when there are two: a body's one Content-Length costs no array.
            let isLength = { (header: (name: String, value: String)) in
                header.name.caseInsensitiveEquals("Content-Length")
            }
            if let first = headers.firstIndex(where: isLength), headers[(first + 1)...].contains(where: isLength),
                Set(headers.filter(isLength).map { $0.value.trimmingCharacters(in: .whitespaces) }).count > 1
            {
                violation = .conflictingContentLength
                closeAfter = true
            }
        }
        var body: [UInt8] = []
        if let input = req.inputBody {
            if input.count > configuration.maxBodyBytes {
                if violation == nil { violation = .bodyTooLarge(limit: configuration.maxBodyBytes) }
                closeAfter = true
            } else {
                body = input.removeAll()
            }
        }
        state.value.requestCounter &+= 1
        var requestID = RequestID.make(prefix: idPrefix, counter: state.value.requestCounter)
        if let given = headers.first(where: { $0.name.caseInsensitiveEquals("X-Request-Id") })?.value,
            RequestID.isWellFormed(given)
        {
            requestID = given
        }

        var request = HTTPRequest(
            method: method, path: target.path, query: target.query, headers: headers, body: body, requestID: requestID)
        request.violation = violation
        request.rawPath = target.rawPath
        request.remoteAddress = connection?.clientAddress ?? ""
        request.forwardingTrusted = connection?.connectionFilter?.state.namedNoClient != true
        request.loop = handle
        request.proxyTarget = connection?.tunnel ?? Self.absoluteTarget(req)
        if method == .CONNECT, tunnels != nil, let evcon {
            return openTunnel(req, request, evcon: evcon)
        }
        var halfClose = false
        if connection?.connectionFilter != nil && !closeAfter {
            // evhttp must not close a filter's connection after an answer: it shuts the socket
            // down at once, and the answer's end may still wait in the socket bufferevent. On the
            // forward-proxy door the connection stays open whatever the client asked
            // (`Connection: close`, HTTP/1.0, absolute form without Proxy-Connection): the answer
            // comes with a length, the client closes itself, the idle timeout ends the rest.
            // Behind a PROXY-protocol balancer a client that asked for a close gets one, as from
            // the plain listener: its sending side ends once the answer is sent (shutDownWhenSent).
            halfClose = tunnels == nil && HTTPSyntax.asksToClose(headers, isHTTP10: req.isHTTP10)
            Self.keepAlive(req)
            if halfClose { connection?.stopReadingRequests() }
        }
        state.value.drain.dispatched()
        // The evhttp request travels as an address and is only turned back into a pointer on
        // this loop's thread (in finish).
        let requestBits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(req.raw)))
        let responder = HTTPResponder { [self, closeAfter, halfClose, requestID] response in
            execute {
                let req = EvRequest(raw: OpaquePointer(bitPattern: requestBits)!)
                let filter =
                    halfClose ? req.connection.flatMap { self.state.value.connections[$0.raw] }?.connectionFilter : nil
                self.finish(req, response, closeAfter: closeAfter, requestID: requestID)
                if let filter { self.shutDownWhenSent(filter) }
            }
        }
        handler(request, responder)
    }

    /// The parsed target of an absolute-form request (`POST http://host:port/path`).
    static func absoluteTarget(_ req: EvRequest) -> ProxyTarget? {
        guard let target = req.absoluteTarget else { return nil }
        return ProxyTarget(
            scheme: target.scheme, host: target.host,
            port: target.port > 0 ? target.port : (target.scheme == "https" ? 443 : 80))
    }
}
