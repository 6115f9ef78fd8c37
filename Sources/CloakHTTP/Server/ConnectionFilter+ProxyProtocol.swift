import COpenSSL
import Foundation

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
            namedNoClient = true
        case let .proxied(source, length):
            src.drain(length)
            guard let admitSource, admitSource(source) else { return refuseProxy("proxy_address_limit") }
            proxiedSource = source
        }
        mode = .plain
        return input(src, dst)
    }

    /// The socket's peer, numeric.
    private func peerAddress() -> IPAddress? {
        guard let socket = filter?.underlying else { return nil }
        let fd = socket.fd
        guard fd >= 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = storage.ss_family
        guard family == sa_family_t(AF_INET) || family == sa_family_t(AF_INET6) else { return nil }
        let ok: Bool = withUnsafePointer(to: &storage) { p in
            if family == sa_family_t(AF_INET) {
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var a = sin.pointee.sin_addr
                    return inet_ntop(AF_INET, &a, &text, socklen_t(text.count)) != nil
                }
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                var a = sin6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &a, &text, socklen_t(text.count)) != nil
            }
        }
        return ok ? IPAddress(String(cString: text)) : nil
    }

    private func refuseProxy(_ reason: String) -> FilterResult {
        proxyRefusal = reason
        mode = .failed
        return close()
    }
}
