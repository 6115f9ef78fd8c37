import CLibevent
import Foundation

/// One accepted connection, owned by its loop: its bufferevent (made by the loop, so every
/// connection, plain or TLS, is seen at accept), the evhttp connection once evhttp has made it,
/// its slot in the connection budget and its ``RequestClock``.
///
/// Loop thread only. The worker keeps it alive from accept until evhttp closes the connection.
/// Its clock is `@exclusivity(unchecked)` for that reason: one thread, nothing for the
/// runtime's access checks to catch, and the input callback reads it on every read.
final class ServerConnection {
    let bufferevent: OpaquePointer
    let admission: Admission
    var evcon: OpaquePointer?
    @exclusivity(unchecked) var clock: RequestClock
    /// The client's numeric address.
    var peer = ""
    /// The callback on the bufferevent's input buffer that feeds the clock.
    var inputCallback: OpaquePointer?
    /// Whether the connection speaks TLS (a refusal is then a close, not a canned answer).
    var isTLS = false
    /// For a connection inside a CONNECT tunnel: where its requests go.
    var tunnel: ProxyTarget?
    /// On a forward-proxy door: the filter that turns to TLS when a CONNECT is granted.
    var tunnelFilter: TunnelFilter?

    init(bufferevent: OpaquePointer, admission: Admission, now: UInt64) {
        self.bufferevent = bufferevent
        self.admission = admission
        self.clock = RequestClock(now: now)
    }

    /// The strict framing of every byte the client sends (``RequestFraming``): a violation is
    /// answered 400 and the connection closed (``LoopWorker``).
    @exclusivity(unchecked) var framing = RequestFraming()

    /// Feeds the framing scan (every byte, in order) and, while a head is awaited, the clock with
    /// bytes just added to the input buffer (the last `added` bytes). Runs before evhttp reads
    /// them, so a request is dispatched only after its own bytes were judged.
    func inputGrew(by added: Int, now: UInt64) {
        guard added > 0, let input = bufferevent_get_input(bufferevent) else { return }
        let length = evbuffer_get_length(input)
        let start = length - min(added, length)
        if framing.isScanning {
            peek(input, from: start) { framing.consume($0) != .scanning }
        }
        if clock.phase == .awaitingHead {
            peek(input, from: start) { clock.received($0, now: now) }
        }
        watchInput(input)
    }

    /// The answer was sent: the next head's clock starts, and whatever the client already sent
    /// of its next request (pipelined) is given to the clock now (the framing scan saw it when
    /// it arrived).
    func answered(now: UInt64) {
        clock.answered(now: now)
        guard let input = bufferevent_get_input(bufferevent) else { return }
        if evbuffer_get_length(input) > 0 { peek(input, from: 0) { clock.received($0, now: now) } }
        watchInput(input)
    }

    /// Whether ``inputCallback`` is enabled (it is when added).
    @exclusivity(unchecked) private var watching = true

    /// The input callback is wanted while a head is awaited or the framing scan runs (every
    /// byte, bodies included, until a violation). evbuffer calls it on every change to the
    /// buffer, each line evhttp reads and drains included; only additions are looked at.
    private func watchInput(_ input: OpaquePointer) {
        let wanted = clock.phase == .awaitingHead || framing.isScanning
        guard wanted != watching, let entry = inputCallback else { return }
        if wanted {
            evbuffer_cb_set_flags(input, entry, UInt32(EVBUFFER_CB_ENABLED))
        } else {
            evbuffer_cb_clear_flags(input, entry, UInt32(EVBUFFER_CB_ENABLED))
        }
        watching = wanted
    }

    /// Shows `visit` the buffer's bytes from `start` in place, chunk by chunk, until it returns true.
    private func peek(_ input: OpaquePointer, from start: Int, _ visit: (UnsafeRawBufferPointer) -> Bool) {
        var position = evbuffer_ptr()
        guard evbuffer_ptr_set(input, &position, start, EVBUFFER_PTR_SET) == 0 else { return }
        let wanted = evbuffer_get_length(input) - start
        // The chunks are peeked at in batches of eight, on the stack (a read is almost always one).
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 8) { chunks in
            var remaining = wanted
            while remaining > 0 {
                let count = Int(evbuffer_peek(input, remaining, &position, chunks.baseAddress, 8))
                guard count > 0 else { return }
                for chunk in chunks.prefix(min(count, 8)) {
                    guard let base = chunk.iov_base else { continue }
                    let length = min(chunk.iov_len, remaining)
                    if visit(UnsafeRawBufferPointer(start: base, count: length)) { return }
                    remaining -= length
                }
                guard count > 8, remaining > 0,
                    evbuffer_ptr_set(input, &position, evbuffer_get_length(input) - remaining, EVBUFFER_PTR_SET) == 0
                else { return }
            }
        }
    }

    /// Writes a canned answer straight to the socket, without waiting (a refusal at accept).
    func writeNow(_ bytes: [UInt8]) {
        let fd = bufferevent_getfd(bufferevent)
        guard fd >= 0 else { return }
        bytes.withUnsafeBytes { raw in
            _ = send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
    }
}
