import COpenSSL
import Foundation

/// The bufferevent filter between a socket and evhttp, for the two listeners that need one:
///
/// - A forward-proxy door: bytes pass as they are until a CONNECT is granted; from the client's
///   next byte on, OpenSSL (on memory BIOs) terminates the client's TLS with the host's leaf
///   certificate and evhttp reads and writes plaintext, so the requests inside the tunnel are
///   parsed with the listener's usual limits.
/// - A listener with `server.proxy_protocol`: the connection's first bytes are a PROXY protocol
///   header (``ProxyProtocolHeader``) from a trusted proxy; the filter reads and drops it, keeps
///   the client address it names (``proxiedSource``), and passes the rest. A peer that is not a
///   trusted proxy, or a header that is missing or malformed, closes the connection.
///
/// Loop thread only. The filter bufferevent owns this object (its free-context callback
/// releases it).
///
/// Lifetime. libevent 2.1's filter calls its user's write callback (evhttp's) without holding a
/// reference on the filter bufferevent, and evhttp frees a connection from that callback when its
/// answer closes it; the filter then goes on touching the bufferevent it was freed under (it
/// re-arms its write timeout, reads its buffers), which left freed memory in the loop's timer heap
/// (a spinning loop or SIGSEGV under hostile tunnel traffic). So the loop holds a reference of its
/// own on every filter bufferevent from its creation until a loop turn after evhttp closed the
/// connection (``releaseHold()``): whatever libevent callback is on the stack when evhttp lets go
/// finishes on live memory, and the bufferevent is finalized only from a callback of its own.
final class ConnectionFilter {
    enum Mode {
        /// A PROXY protocol header is awaited, from one of these proxies.
        case awaitingProxyHeader(TrustedProxies)
        /// Before the CONNECT is granted: plain HTTP.
        case plain
        /// Granted: the `200` still leaves in plain; the client's next bytes are TLS.
        case granted(Session)
        /// TLS with this session.
        case tls(Session)
        /// A TLS failure: nothing more passes.
        case failed
    }

    /// What the filter changes as bytes pass: one ``LoopBound`` value (loop thread only,
    /// checked), its fields read and written in place as `state.field`.
    struct State {
        var mode: Mode
        /// The client address a PROXY header named (nil: none, or `LOCAL`).
        var proxiedSource: String?
        /// A PROXY header named no client (`LOCAL`, `UNKNOWN`, an unspecified family): the
        /// connection is served as from the balancer, and no forwarding header is believed.
        var namedNoClient = false
        /// Asked when a PROXY header names a client: false refuses the connection (its address holds
        /// its share of connections).
        var admitSource: ((String) -> Bool)?
        /// Why a PROXY header was refused, as a code (`proxy_untrusted_peer`, `proxy_header_invalid`,
        /// `proxy_address_limit`; never the bytes).
        var proxyRefusal: String?
        /// The filter bufferevent, set once made; nil once evhttp let go of the connection.
        var filter: Bufferevent?
        /// The filter bufferevent while the loop's own reference on it is held.
        var held: Bufferevent?
        /// Pushes output evhttp queued while the filter was waiting for the handshake.
        var kick: LoopEvent?
        var handshakeDone = false
        /// A TLS listener behind PROXY protocol: the server context whose session starts right
        /// after the header (nil: plain HTTP follows it).
        var tlsAfterProxyHeader: OpaquePointer?
        /// Set by ``discardInput()``.
        var discarding = false
    }

    @exclusivity(unchecked) var state: LoopBound<State>

    init(mode: Mode, thread: LoopThread) { state = LoopBound(State(mode: mode), loop: thread) }

    static let chunk = 16 * 1024

    /// A granted tunnel's TLS: the SSL (server side, memory BIOs), a buffer for bytes between
    /// libevent and OpenSSL (never reallocated per call) and an evbuffer for ciphertext on its
    /// way to the socket. Made only when a CONNECT is granted: connections that never
    /// authenticate hold none of it.
    final class Session {
        let ssl: OpaquePointer
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: ConnectionFilter.chunk, alignment: 16)
        let ciphertext: EvBuffer

        init?(context: OpaquePointer) {
            guard let ssl = SSL_new(context) else { return nil }
            guard let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()), let ciphertext = EvBuffer.make()
            else {
                SSL_free(ssl)
                return nil
            }
            SSL_set_bio(ssl, rbio, wbio)
            SSL_set_accept_state(ssl)
            self.ssl = ssl
            self.ciphertext = ciphertext
        }

        deinit {
            SSL_free(ssl)
            scratch.deallocate()
            ciphertext.free()
        }
    }

    deinit {
        state.kick?.free()
    }

    /// Makes the socket bufferevent and the filter over it; nil when either cannot be made.
    static func make(base: EventBase, thread: LoopThread, mode: Mode = .plain) -> (
        bufferevent: Bufferevent, filter: ConnectionFilter
    )? {
        guard let socket = Bufferevent.socket(base) else { return nil }
        let context = ConnectionFilter(mode: mode, thread: thread)
        guard let bev = Bufferevent.filter(over: socket, context) else {
            socket.free()
            return nil
        }
        context.state.filter = bev
        // The loop's reference (see the type's comment), given back by releaseHold().
        bev.retain()
        context.state.held = bev
        context.state.kick = LoopEvent.user(
            base,
            { _, _, arg in
                guard let arg else { return }
                Unmanaged<ConnectionFilter>.fromOpaque(arg).takeUnretainedValue().state.filter?.flushWrites()
            }, Unmanaged.passUnretained(context).toOpaque())
        // The kick's argument is this object, alive until the filter is finalized (its context).
        // evhttp queues an answer before it enables writing, and a libevent 2.1 filter does not
        // look at its output again when writing is enabled: every addition is pushed one loop
        // turn later (after evhttp has enabled writing and set its write callback).
        bev.output?.reportAdditions(to: context)
        return (bev, context)
    }

    /// Bytes were queued for the client: pushed through the filter a loop turn later.
    func outputAdded() { state.kick?.activate() }

    /// evhttp is freeing the connection (a libevent callback of the filter may still be on the
    /// stack): nothing may flush the filter any more. The loop's reference keeps the bufferevent
    /// alive until ``releaseHold()``, which the loop calls a turn later.
    func detach() {
        state.kick?.cancel()
        state.filter = nil
    }

    /// Gives back the loop's reference: from a loop turn after ``detach()``, never from inside a
    /// libevent callback of this bufferevent. Its timeouts and events are removed first, so
    /// nothing of it stays armed; when evhttp's reference is gone too, libevent finalizes it
    /// (and closes the socket) from its own callback queue.
    func releaseHold() {
        guard let bev = state.held else { return }
        state.held = nil
        state.filter = nil
        state.kick?.cancel()
        bev.quiesce()
        bev.release()
    }

    /// Whether every byte of the answers so far has left for the kernel: nothing waits in the
    /// filter or in the socket bufferevent (nil once evhttp let go of the connection).
    var hasSentEverything: Bool? {
        guard let bev = state.filter, let socket = bev.underlying, socket.fd >= 0 else { return nil }
        return (bev.output?.count ?? 0) == 0 && (socket.output?.count ?? 0) == 0
    }

    /// Ends the connection's sending side: the client reads the answer, then the end of the
    /// stream; evhttp keeps its side until the client closes (or the idle timeout).
    func shutDownSending() {
        guard let socket = state.filter?.underlying, socket.fd >= 0 else { return }
        _ = shutdown(socket.fd, Int32(SHUT_WR))
    }

    /// Whether the loop still holds its reference (tests).
    var isHeld: Bool { state.held != nil }

    /// A TLS listener: the connection's first bytes start a TLS handshake answered with
    /// `context`; false when OpenSSL could not make the session.
    func startTLS(_ context: OpaquePointer) -> Bool {
        guard case .plain = state.mode, let session = Session(context: context) else { return false }
        state.mode = .tls(session)
        return true
    }

    /// From now on every byte the client sends is dropped unread: it asked for the connection
    /// to end, and nothing it sends after that request may become another one.
    func discardInput() { state.discarding = true }

    /// Grants the tunnel: the client's next bytes start a TLS handshake answered with `context`.
    func grant(_ context: OpaquePointer) -> Bool {
        guard case .plain = state.mode, let session = Session(context: context) else { return false }
        state.mode = .granted(session)
        return true
    }
}
