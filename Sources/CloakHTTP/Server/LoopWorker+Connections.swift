import Glibc

/// Accepting, accounting and deadlines of a loop's connections. Loop thread only.
///
/// A connection is counted at accept, before any byte is read: over ``HTTPServerConfiguration/maxConnections``
/// (or its address's share) it is answered 503 (plain HTTP; a TLS one is just closed) and closed.
extension LoopWorker {
    /// A socket the listener accepted (non-blocking, close-on-exec).
    func accepted(_ fd: Int32, peer: String) {
        guard budget.acquire() else { return refuse(fd) }
        var addressKey: String?
        if configuration.proxyProtocol {
            // Only a trusted balancer may open connections here: closed before a byte is read.
            // The connection counts under the client its PROXY header names (admitProxied).
            guard configuration.trustedProxies.contains(peer) else {
                budget.release()
                Glibc.close(fd)
                ConnectionNotices.shared.report("proxy_untrusted_peer")
                return
            }
        } else {
            guard addressBudget.acquire(peer) else {
                // This address holds its share already: refused like a connection over the limit.
                budget.release()
                return refuse(fd)
            }
            addressKey = peer
        }
        guard
            let connection = ServerConnection(
                fd: fd, peer: peer, worker: self, afterConnect: tunnels != nil ? .keepScanning : .refuse,
                proxyProtocol: configuration.proxyProtocol, tls: tls)
        else {
            // No TLS session (or loop event) could be made: closed without a byte, serving it in
            // cleartext would fail open. The transport owned the socket and has closed it.
            if let addressKey { addressBudget.release(addressKey) }
            budget.release()
            return
        }
        connection.addressKey = addressKey
        state.value.connectionCounter &+= 1
        connection.id = state.value.connectionCounter
        state.value.connections[connection.id] = connection
        connection.start()
    }

    /// The canned 503 for a connection over a limit, written straight to the socket without
    /// waiting; then the socket closes.
    private func refuse(_ fd: Int32) {
        if tls == nil {
            let bytes = Self.canned(503, "Service Unavailable", configuration.refusalBody)
            _ = bytes.withUnsafeBytes { Sockets.send(fd, $0) }
        }
        Glibc.close(fd)
    }

    /// A PROXY header named `source`: the connection counts under it (false: that address holds
    /// its share, and the connection is refused).
    func admitProxied(_ source: String, for connection: ServerConnection) -> Bool {
        guard addressBudget.acquire(source) else { return false }
        connection.addressKey = source
        return true
    }

    /// The connection closed: its slots go back.
    func connectionClosed(_ connection: ServerConnection) {
        guard state.value.connections.removeValue(forKey: connection.id) != nil else { return }
        if let key = connection.addressKey { addressBudget.release(key) }
        budget.release()
    }

    /// Times out every connection past its deadline (four times a second).
    func sweep() {
        let now = Self.now()
        heartbeat?.beat(now: now)
        var expired: [ServerConnection] = []
        for connection in state.value.connections.values where connection.deadline < now {
            expired.append(connection)
        }
        for connection in expired { connection.deadlinePassed() }
    }

    /// The `Date` text for the current second (formatted once a second). `time()` is the wall
    /// clock without a lock.
    func dateText() -> [UInt8] {
        state.value.date.update(to: time(nil))
        return state.value.date.text
    }

    /// A whole JSON answer that closes the connection.
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
}
