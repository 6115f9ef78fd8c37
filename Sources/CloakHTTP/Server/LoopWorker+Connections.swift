import COpenSSL
import Foundation
import Synchronization

/// Connection accounting, deadlines and accept errors of a loop. Loop thread only.
///
/// libevent 2.1 has no "new connection" callback, so the loop makes every connection's
/// bufferevent itself (`evhttp_set_bevcb`): that is where a connection is counted, at accept,
/// before any byte is read. evhttp makes its connection object right after; one turn of the loop
/// later (``adoptAccepted()``) the loop finds it through the bufferevent's callback argument,
/// refuses it when over the limit, and from then on watches its deadlines.
extension LoopWorker {
    /// Called by evhttp for every accepted socket.
    func makeBufferevent(_ base: EventBase) -> Bufferevent? {
        var ssl: OpaquePointer?
        if let context = tls?.context { ssl = SSL_new(context) }
        let slot = budget.acquire()
        var admission = Admission.decide(tlsConfigured: tls != nil, tlsSessionMade: ssl != nil, slotTaken: slot)
        // Only a served connection keeps its slot (closeCallback releases it).
        if slot && admission != .serve { budget.release() }
        var made: Bufferevent?
        var connectionFilter: ConnectionFilter?
        if tunnels != nil, admission == .serve {
            // A forward-proxy door: plain until a CONNECT is granted, then TLS inside the filter.
            if let (bev, filter) = ConnectionFilter.make(base: base, thread: thread) {
                made = bev
                connectionFilter = filter
            }
        } else if configuration.proxyProtocol, admission == .serve {
            // A PROXY header first, read and dropped by the filter; then TLS (if any) inside the
            // same filter, on memory BIOs, as in a forward-proxy tunnel. (libevent 2.1's OpenSSL
            // filter over another filter crashed in libcrypto on the first request: evhttp
            // setting the socket replaces the SSL's BIOs under it. Issue 44, defect 1b.)
            if let ssl { SSL_free(ssl) }
            if let (bev, filter) = ConnectionFilter.make(
                base: base, thread: thread, mode: .awaitingProxyHeader(configuration.trustedProxies))
            {
                filter.state.tlsAfterProxyHeader = tls?.context
                made = bev
                connectionFilter = filter
            }
            if made == nil {
                budget.release()
                admission = .closeWithoutTLS
            }
        } else if let ssl, let context = tls?.context, admission == .serve {
            // TLS inside the filter too, on memory BIOs: every call drains OpenSSL whole, so a
            // read limit strands no decrypted bytes (libevent 2.1's OpenSSL bufferevent leaves the
            // rest of a record inside OpenSSL until the socket is readable again), and answers
            // wait below the filter like every other kind's (issue 44, defect 1).
            SSL_free(ssl)
            if let (bev, filter) = ConnectionFilter.make(base: base, thread: thread) {
                if filter.startTLS(context) {
                    made = bev
                    connectionFilter = filter
                } else {
                    bev.free()
                    filter.releaseHold()
                }
            }
            if made == nil {
                budget.release()
                admission = .closeWithoutTLS
            }
        } else if let ssl {
            SSL_free(ssl)
        }
        // A plain bufferevent that will be closed before it reads anything. Never nil when it can
        // be helped: evhttp would make its own plain one, uncounted, on a TLS port.
        if made == nil { made = Bufferevent.socket(base) }
        guard let bev = made else {
            if admission == .serve { budget.release() }
            return nil
        }
        // Our own reference: if evhttp gives up on the socket before adoptAccepted runs, it frees
        // the bufferevent; the memory stays valid (with its callbacks cleared) until we let go.
        bev.retain()
        let connection = ServerConnection(
            bufferevent: bev, admission: admission, now: Self.now(), thread: thread, servesConnect: tunnels != nil)
        connection.isTLS = tls != nil
        connection.connectionFilter = connectionFilter
        connection.limitBuffers()
        state.value.accepted.append(connection)
        acceptedEvent?.activate()
        return bev
    }

    /// Finds the evhttp connections of the sockets just accepted; closes those refused, and
    /// watches the others.
    func adoptAccepted() {
        let batch = state.value.accepted
        state.value.accepted.removeAll(keepingCapacity: true)
        for connection in batch {
            defer { connection.bufferevent.release() }
            guard let cbarg = connection.bufferevent.callbackArgument else {
                // evhttp gave up on the socket itself: nothing to adopt.
                if connection.admission == .serve { budget.release() }
                if let filter = connection.connectionFilter { releaseLater(filter) }
                continue
            }
            let evcon = EvConnection(raw: OpaquePointer(cbarg))
            switch connection.admission {
            case .refuseOverLimit:
                // A canned answer is plain HTTP: a TLS client over the limit is just closed.
                if !connection.isTLS { connection.writeNow(Self.refusal(configuration.refusalBody)) }
                evcon.free()
            case .closeWithoutTLS:
                evcon.free()
            case .serve:
                let peer = evcon.peer
                if configuration.proxyProtocol, !configuration.trustedProxies.contains(peer) {
                    // Only a trusted balancer may open connections here: closed before a byte is
                    // read (it would otherwise hold a slot until the header timeout).
                    budget.release()
                    evcon.free()
                    if let filter = connection.connectionFilter { releaseLater(filter) }
                    ConnectionNotices.shared.report("proxy_untrusted_peer")
                    continue
                } else if configuration.proxyProtocol, let filter = connection.connectionFilter {
                    // The peer is the balancer: the connection counts under the client address
                    // its PROXY header names, once read (a refusal closes it then).
                    filter.state.admitSource = { [weak self, weak connection] source in
                        guard let self, let connection, self.addressBudget.acquire(source) else { return false }
                        connection.addressKey = source
                        return true
                    }
                } else if addressBudget.acquire(peer) {
                    connection.addressKey = peer
                } else {
                    // This address holds its share already: refused like a connection over the limit.
                    budget.release()
                    if !connection.isTLS { connection.writeNow(Self.refusal(configuration.refusalBody)) }
                    evcon.free()
                    // No close callback was set: the filter's reference goes back here.
                    if let filter = connection.connectionFilter { releaseLater(filter) }
                    continue
                }
                connection.evcon = evcon.raw
                connection.peer = peer
                state.value.connections[evcon.raw] = connection
                evcon.onClose(
                    { evcon, arg in
                        guard let evcon, let arg else { return }
                        Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue().connectionClosed(evcon)
                    }, Unmanaged.passUnretained(self).toOpaque())
                if let input = connection.bufferevent.input {
                    // Called on every change to the buffer, evhttp's drains of each line read
                    // included: only additions are looked at (and only they read the clock).
                    connection.inputCallback = input.reportAdditions(to: connection)
                    // Bytes that arrived before the callback (none, normally: evhttp reads from
                    // the next loop turn on) are judged now.
                    let buffered = input.count
                    if buffered > 0 { connection.inputGrew(by: buffered, now: LoopWorker.now()) }
                }
                if isDraining { evcon.setTimeout(seconds: 0.5) }
            }
        }
    }

    /// evhttp is freeing the connection.
    func connectionClosed(_ evcon: OpaquePointer) {
        guard let connection = state.value.connections.removeValue(forKey: evcon) else { return }
        if let filter = connection.connectionFilter {
            filter.detach()
            releaseLater(filter)
        }
        if let entry = connection.inputCallback, let input = connection.bufferevent.input { input.remove(entry) }
        if let key = connection.addressKey { addressBudget.release(key) }
        if let reason = connection.connectionFilter?.state.proxyRefusal { ConnectionNotices.shared.report(reason) }
        budget.release()
    }

    /// Gives back the loop's reference on `filter` a loop turn from now (we may be inside one of
    /// its libevent callbacks: evhttp frees connections from its write callback).
    func releaseLater(_ filter: ConnectionFilter) {
        state.value.filtersToRelease.append(filter)
        guard state.value.filtersToRelease.count == 1 else { return }
        releaseTimer?.schedule(after: 0)
    }

    /// The next loop turn: every filter queued by ``releaseLater(_:)``.
    /// The next loop turn: every filter queued by ``releaseLater(_:)``, and the connections
    /// waiting to end their sending side (``shutDownWhenSent(_:)``), checked again 10 ms later
    /// while any still has answer bytes to send.
    func releaseClosedFilters() {
        let batch = state.value.filtersToRelease
        state.value.filtersToRelease.removeAll(keepingCapacity: true)
        for filter in batch { filter.releaseHold() }
        state.value.filtersToShutDown.removeAll { filter in
            guard let sent = filter.hasSentEverything else { return true }  // closed meanwhile
            if sent { filter.shutDownSending() }
            return sent
        }
        if !state.value.filtersToShutDown.isEmpty { releaseTimer?.schedule(after: 0.01) }
    }

    /// A client behind a PROXY-protocol balancer asked for a close (`Connection: close`, HTTP/1.0)
    /// and evhttp must not close the filter's connection itself (it would shut the socket down
    /// with the answer's end still in the socket bufferevent): once every byte of the answer has
    /// left, the sending side is shut down, so the client reads the whole answer and then the end
    /// of the stream, as from the plain listener. Bounded by the idle timeout, which closes a
    /// connection whose client reads nothing.
    func shutDownWhenSent(_ filter: ConnectionFilter) {
        state.value.filtersToShutDown.append(filter)
        releaseTimer?.schedule(after: 0)
    }

    /// Closes every connection past its head or body deadline (four times a second).
    func sweep() {
        let now = Self.now()
        heartbeat?.beat(now: now)
        let head = UInt64(configuration.headerTimeoutSeconds) * 1_000_000_000
        let body = UInt64(configuration.bodyTimeoutSeconds) * 1_000_000_000
        let expired = state.value.connections.filter {
            $0.value.isExpired(now: now, headerTimeout: head, bodyTimeout: body)
        }
        for (evcon, _) in expired { EvConnection(raw: evcon).free() }
        // A framing violation evhttp did not turn into a request (it waits for a body or a head
        // that will not come right): answered 400 here and closed. Never while a request of the
        // connection is with the handler (its answer would go to a freed request); that one is
        // answered, and the next request then finds the violation.
        let broken = state.value.connections.filter { $0.value.isViolatedOutsideHandling }
        for (evcon, connection) in broken {
            // Only on a plain connection, and only when evhttp has nothing queued to write (its
            // own error answer would interleave with this one).
            if !connection.isTLS && connection.tunnel == nil,
                let output = connection.bufferevent.output, output.count == 0
            {
                connection.writeNow(Self.canned(400, "Bad Request", configuration.framingRefusalBody))
            }
            EvConnection(raw: evcon).free()
        }
    }

    /// The canned 503 for a connection over the limit.
    static func refusal(_ body: [UInt8]) -> [UInt8] { canned(503, "Service Unavailable", body) }

    /// A whole JSON answer that closes the connection, written without evhttp.
    static func canned(_ status: Int, _ reason: String, _ body: [UInt8]) -> [UInt8] {
        Array(
            """
            HTTP/1.1 \(status) \(reason)\r
            Content-Type: application/json\r
            Content-Length: \(body.count)\r
            Connection: close\r
            \r

            """.utf8) + body
    }

    // MARK: Accept errors

    /// At the descriptor limit `accept` fails with EMFILE while the listening socket stays
    /// readable: libevent 2.1 would call it again at once, forever (100 % CPU). Instead the
    /// listener pauses for 100 ms, during which closing connections free descriptors.
    func watchAcceptErrors(_ listener: Listener) {
        state.value.listener = listener
        Self.listeners.withLock {
            $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener.raw)))] = Unmanaged.passUnretained(self)
        }
        listener.onAcceptError { listener, _ in
            guard let listener else { return }
            let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener)))
            LoopWorker.listeners.withLock { $0[key] }?.takeUnretainedValue().pauseAccepting()
        }
    }

    func forgetListener() {
        guard let listener = state.value.listener else { return }
        Self.listeners.withLock { $0[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(listener.raw)))] = nil }
        state.value.listener = nil
    }

    private func pauseAccepting() {
        guard let listener = state.value.listener else { return }
        listener.disable()
        if state.value.acceptPauseTimer == nil {
            state.value.acceptPauseTimer = LoopEvent.timer(
                base,
                { _, _, arg in
                    guard let arg else { return }
                    let worker = Unmanaged<LoopWorker>.fromOpaque(arg).takeUnretainedValue()
                    worker.state.value.listener?.enable()
                }, Unmanaged.passUnretained(self).toOpaque())
        }
        state.value.acceptPauseTimer?.schedule(after: 0.1)
    }

    /// Listener → its loop, for the error callback (whose argument is evhttp's, not ours).
    static let listeners = Mutex<[UInt: Unmanaged<LoopWorker>]>([:])
}
