import Glibc

/// The byte stream under one upstream connection: a plain socket (``PlainTransport``) or TLS
/// (``TLSTransport``). Loop thread only. It reports to its ``UpstreamTransportOwner`` and never
/// calls it from inside one of the owner's own calls (`connect`, `write`, `close`).
protocol UpstreamTransport: AnyObject {
    /// Opens the socket and starts connecting; false when that failed at once.
    func connect(to address: String, port: Int) -> Bool
    /// Sends `bytes` (after the connect, when it is still under way); false when the connection is
    /// known to be broken.
    func write(_ bytes: [UInt8]) -> Bool
    /// Closes the socket; no report follows.
    func close()
    /// Whether part of what was written has not gone out yet.
    var isWriting: Bool { get }
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
}
