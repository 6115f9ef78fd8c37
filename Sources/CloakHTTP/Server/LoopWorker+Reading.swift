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
        if tunnels != nil, connection?.connectionFilter != nil, !closeAfter {
            // On the forward-proxy door a connection stays open after an answer, whatever the
            // client asked (`Connection: close`, HTTP/1.0, absolute form without
            // Proxy-Connection): it may CONNECT next, and the answer comes with a length, so the
            // client closes itself; the idle timeout ends the rest. A PROXY-protocol listener
            // closes as the plain one does: the filter keeps the socket until its answer's last
            // byte is sent (ConnectionFilter.releaseHold(now:)).
            Self.keepAlive(req)
        }
        state.value.drain.dispatched()
        // The evhttp request travels as an address and is only turned back into a pointer on
        // this loop's thread (in finish).
        let requestBits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(req.raw)))
        let responder = HTTPResponder { [self, closeAfter, requestID] response in
            execute {
                self.finish(
                    EvRequest(raw: OpaquePointer(bitPattern: requestBits)!), response, closeAfter: closeAfter,
                    requestID: requestID)
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
