import Glibc

/// The byte stream under one upstream connection: a plain socket (``PlainTransport``) or TLS
/// (``TLSTransport``). Loop thread only. It reports to its ``UpstreamTransportOwner`` and never
/// calls it from inside one of the owner's own calls (`connect`, `write`, `close`).
protocol UpstreamTransport: AnyObject {
    /// Opens the socket and starts connecting; false when that failed at once.
    func connect(to address: String, port: Int) -> Bool
    /// Sends `bytes` (after the connect, when it is still under way). With
    /// `unlessInputWaiting`, looks right before the first byte goes into the socket, with no
    /// loop turn or other work between, and writes nothing when anything waits to be read.
    func write(_ bytes: [UInt8], unlessInputWaiting: Bool) -> UpstreamWriteOutcome
    /// Closes the socket; no report follows.
    func close()
    /// Whether part of what was written has not gone out yet.
    var isWriting: Bool { get }
    /// How many bytes of what was written have not gone out yet.
    var unsent: Int { get }
}

/// What became of a write.
enum UpstreamWriteOutcome: Equatable {
    /// Sent, or queued behind the connect or the socket's room.
    case accepted
    /// The connection is known to be broken.
    case failed
    /// Nothing was written: bytes (or the peer's end) were waiting to be read.
    case inputWaiting
}

/// What a transport reports.
protocol UpstreamTransportOwner: AnyObject {
    /// The TCP connect (and TLS handshake) finished.
    func transportConnected()
    /// Bytes arrived, in order; they are lent for the call. `more`: further bytes may already
    /// be waiting (a read that filled its buffer, a chunk that is not the input's last, a TLS
    /// record or anything else still below the input), so an answer ending exactly here may not
    /// be all the peer sent.
    func transportReceived(_ bytes: UnsafeRawBufferPointer, more: Bool)
    /// The peer closed cleanly (`error` nil: TCP's FIN, or TLS's close_notify) or the connection
    /// failed (a reset, TLS ended without close_notify); nothing is reported after it.
    func transportClosed(_ error: String?)
    /// Everything written has gone out after waiting for the socket (a write that went out in
    /// its own call is not reported: the writer sees ``UpstreamTransport/isWriting`` false).
    func transportDrained()
    /// The first bytes waiting after everything written arrived before the last write began
    /// (``ArrivalCheck``): they cannot answer it. Reported before they are read; the owner may
    /// close the transport.
    func transportReceivedBeforeWrite()
}
