import COpenSSL
import Glibc

/// A TLS connection: an OpenSSL bufferevent (its callbacks deferred to the loop), the `SSL` made
/// for the host by ``TLSClientContext`` (SNI, hostname verification).
final class TLSTransport: UpstreamTransport {
    private unowned let owner: any UpstreamTransportOwner
    private var bufferevent: Bufferevent?

    /// nil when OpenSSL could not make the connection's objects.
    init?(base: EventBase, tls: TLSClientContext, host: String, owner: any UpstreamTransportOwner) {
        self.owner = owner
        guard let ssl = tls.makeSSL(host: host) else { return nil }
        guard let made = Bufferevent.connectingTLS(base, ssl) else {
            SSL_free(ssl)
            return nil
        }
        bufferevent = made
    }

    deinit { close() }

    func connect(to address: String, port: Int) -> Bool {
        guard let bufferevent, var socketAddress = Sockets.socketAddress(host: address, port: port) else {
            return false
        }
        bufferevent.onInput(
            { _, arg in
                let transport: TLSTransport = CallbackContext.object(arg!)
                transport.readable()
            },
            events: { _, what, arg in
                let transport: TLSTransport = CallbackContext.object(arg!)
                transport.event(BuffereventEvent(what))
            }, CallbackContext.unretained(self))
        guard bufferevent.connect(&socketAddress) else { return false }
        if bufferevent.fd >= 0 { Sockets.setNoDelay(bufferevent.fd) }
        return true
    }

    func write(_ bytes: [UInt8]) -> Bool { bufferevent?.write(bytes) ?? false }

    var isWriting: Bool { (bufferevent?.output?.count ?? 0) > 0 }

    func close() {
        guard let bufferevent else { return }
        self.bufferevent = nil
        bufferevent.clearCallbacks()
        bufferevent.free()
    }

    private func readable() {
        guard let input = bufferevent?.input else { return }
        let length = input.count
        // Chunk by chunk in place; the owner may close the transport on any of them. After the
        // last chunk more may wait below (the next TLS record, already in the socket): an answer
        // ending here must not hand the connection to the next caller with those bytes.
        var given = 0
        input.peek(from: 0) { chunk in
            given += chunk.count
            let more = given < length || self.bufferevent?.mayHaveInputBelow == true
            owner.transportReceived(chunk, more: more)
            return self.bufferevent == nil
        }
        if bufferevent != nil { input.drain(length) }
    }

    private func event(_ what: BuffereventEvent) {
        switch what {
        case .connected:
            owner.transportConnected()
        case .other:
            return
        case .endOfFile, .error:
            // An end without the peer's close_notify may be a cut (anyone on the path can send a
            // FIN or a reset): it ends no answer that is read until the close.
            let clean = what == .endOfFile && bufferevent?.receivedCloseNotify == true
            close()
            owner.transportClosed(
                clean
                    ? nil
                    : what == .error ? "connection failed (refused, reset or TLS)" : "TLS ended without close_notify")
        }
    }
}
