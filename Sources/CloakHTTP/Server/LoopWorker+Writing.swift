import Glibc

/// Writing: an ``HTTPResponse`` goes out through evhttp, with the server's own headers.
extension LoopWorker {
    func finish(_ req: EvRequest, _ response: HTTPResponse, closeAfter: Bool, requestID: String) {
        var response = response
        state.value.drain.answered()
        response.headers.append(("X-Request-Id", requestID))
        if closeAfter || isDraining { response.headers.append(("Connection", "close")) }
        restartClockWhenWritten(req)
        send(response, to: req)
    }

    /// The next head's clock starts when the answer has been written out, not when it is
    /// queued: a large answer to a slow reader is bounded by the write (idle) timeout alone.
    func restartClockWhenWritten(_ req: EvRequest) {
        req.onWritten(
            { req, arg in
                guard let req, let arg else { return }
                let worker = Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue()
                EvRequest(raw: req).connection.flatMap { worker.state.value.connections[$0.raw] }?.answered(
                    now: LoopWorker.now())
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    func send(_ response: HTTPResponse, to req: EvRequest) {
        guard let outHeaders = req.outputHeaders else { return req.replyError(500) }
        // A name or value that could end the header block (an upstream's answer passed through,
        // a revealed value) is dropped, never written.
        var hasDate = false
        for (name, value) in response.headers where HTTPSyntax.isToken(name) && HTTPSyntax.isFieldValue(value) {
            if outHeaders.add(name, value) && name.utf8.count == 4 && name.caseInsensitiveEquals("Date") {
                hasDate = true
            }
        }
        if !hasDate {
            // The loop's cached text, made once a second, so that evhttp does not format one.
            // time() is the wall clock without a lock (the loop's cached time takes the base's
            // lock and trails a clock step by seconds).
            state.value.date.update(to: time(nil))
            state.value.date.cString.withUnsafeBufferPointer { outHeaders.add("Date", $0.baseAddress) }
        }
        if req.method == .HEAD {
            // evhttp 2.1 writes a HEAD answer's body, without a length, on a connection it keeps:
            // a client would read those bytes as the start of the next answer. The length a GET
            // would get, and no body.
            if !response.body.isEmpty { outHeaders.add("Content-Length", String(response.body.count)) }
        } else if !response.body.isEmpty, let out = req.outputBody {
            out.append(response.body)
        }
        req.reply(response.status, reason: reasonPhrase(response.status))
    }

    /// Marks a request keep-alive for evhttp (its input headers decide whether it closes).
    static func keepAlive(_ req: EvRequest) {
        guard let input = req.inputHeaders else { return }
        input.remove("Connection")
        input.remove("Proxy-Connection")
        input.add("Connection", "keep-alive")
        input.add("Proxy-Connection", "keep-alive")
    }
}
