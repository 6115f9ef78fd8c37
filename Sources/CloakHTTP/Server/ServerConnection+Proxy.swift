/// A PROXY protocol header (v1 or v2) read once, before anything else, on a
/// `server.proxy_protocol` listener: who the client is, and then TLS (a TLS listener behind a
/// balancer) or plain HTTP from the byte after it.
struct ProxyPrefix {
    /// The header's bytes so far, while it is being read.
    var pending: [UInt8]?
    /// TLS starts after the header with this context.
    let tlsAfter: TLSServerContext?
    /// The client address the header named (nil: none, or `LOCAL`).
    var source: String?
    /// The header named no client: no forwarding header is believed.
    var namedNoClient = false

    init(expected: Bool, tlsAfter: TLSServerContext?) {
        pending = expected ? [] : nil
        self.tlsAfter = tlsAfter
    }

    var isReading: Bool { pending != nil }
}

extension ServerConnection {
    /// A PROXY header named no client: no forwarding header is believed.
    var namedNoClient: Bool { proxy.namedNoClient }

    func readProxyHeader(_ bytes: UnsafeRawBufferPointer) {
        guard var header = proxy.pending else { return }
        header.append(contentsOf: bytes)
        switch ProxyProtocolHeader.parse(header) {
        case .needMore:
            guard header.count < 16 + ProxyProtocolHeader.maxV2Length else {
                return refuseProxy("proxy_header_invalid")
            }
            proxy.pending = header
        case .invalid:
            refuseProxy("proxy_header_invalid")
        case .local(let length):
            proxy.namedNoClient = true
            proxyHeaderRead(header, length: length)
        case .proxied(let source, let length):
            guard worker.admitProxied(source, for: self) else { return refuseProxy("proxy_address_limit") }
            proxy.source = source
            proxyHeaderRead(header, length: length)
        }
    }

    private func proxyHeaderRead(_ header: [UInt8], length: Int) {
        proxy.pending = nil
        let rest = header[length...]
        if let context = proxy.tlsAfter {
            let started = rest.withUnsafeBytes { transport.startTLS(context, initial: $0) }
            guard started else { return refuseProxy("tls_session_failed") }
            // The ClientHello often came in the same read as the header: decrypted on the next
            // turn (the read event is on already, and nothing else would fire it).
            transport.readSoon()
        } else if !rest.isEmpty {
            rest.withUnsafeBytes { streamReceived($0, more: false) }
        }
    }

    private func refuseProxy(_ reason: String) {
        ConnectionNotices.shared.report(reason)
        close()
    }
}
