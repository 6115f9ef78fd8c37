extension ConnectionFilter {
    /// The PROXY header: peeked at until whole, then dropped from the stream; the rest passes.
    func readProxyHeader(_ src: EvBuffer, _ dst: EvBuffer, trusted: TrustedProxies) -> FilterResult {
        guard let peer = peerAddress(), trusted.contains(peer) else {
            return refuseProxy("proxy_untrusted_peer")
        }
        let wanted = min(src.count, 16 + ProxyProtocolHeader.maxV2Length)
        var bytes = [UInt8](repeating: 0, count: wanted)
        let copied = bytes.withUnsafeMutableBytes { src.copy(into: $0.baseAddress, max: wanted) }
        switch ProxyProtocolHeader.parse(bytes.prefix(max(copied, 0))) {
        case .needMore:
            return .needMore
        case .invalid:
            return refuseProxy("proxy_header_invalid")
        case let .local(length):
            // LOCAL (the balancer's own connection) and UNKNOWN both name no client: served as
            // the balancer, and no forwarding header is believed.
            src.drain(length)
            state.namedNoClient = true
        case let .proxied(source, length):
            src.drain(length)
            guard let admitSource = state.admitSource, admitSource(source) else {
                return refuseProxy("proxy_address_limit")
            }
            state.proxiedSource = source
        }
        state.mode = .plain
        // TLS from the next byte on, terminated here (memory BIOs, as in a tunnel).
        if let context = state.tlsAfterProxyHeader, !startTLS(context) { return refuseProxy("tls_session_failed") }
        return input(src, dst)
    }

    /// The socket's peer, numeric.
    private func peerAddress() -> IPAddress? {
        guard let socket = state.filter?.underlying, let text = Sockets.peer(socket.fd) else { return nil }
        return IPAddress(text)
    }

    private func refuseProxy(_ reason: String) -> FilterResult {
        state.proxyRefusal = reason
        state.mode = .failed
        return close()
    }
}
