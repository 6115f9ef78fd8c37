/// One loop's read buffer, shared by its connections' streams, server's and client's: a read
/// is handed to its owner and done with before the next one, so ten thousand idle connections
/// hold no 16 KiB each.
final class ReadBuffer {
    static let size = 16 << 10
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: ReadBuffer.size, alignment: 16)
    deinit { bytes.deallocate() }
}

/// What a ``SocketStream`` reports.
protocol SocketStreamOwner: AnyObject {
    /// A client's connect (and TLS handshake) ended.
    func streamConnected()
    /// Bytes arrived (plaintext), lent for the call. `more`: further bytes may already be
    /// waiting (a read that filled the buffer, a record OpenSSL holds), so a message ending
    /// exactly here may not be all the peer sent.
    func streamReceived(_ bytes: UnsafeRawBufferPointer, more: Bool)
    /// Everything sent so far has left for the kernel (reported only after a send that had to
    /// wait for the socket).
    func streamDrained()
    /// The peer closed (`error` nil: TCP's FIN, TLS's close_notify, or a lingering close's
    /// end) or the connection failed; the socket is closed, and nothing is reported after it.
    func streamClosed(_ error: String?)
    /// On a reused client connection: the first bytes waiting after everything written
    /// arrived before the last write began (``ArrivalCheck``), so they cannot answer it.
    /// Reported before they are read; the owner may close the stream.
    func streamReceivedBeforeWrite()
}

extension SocketStreamOwner {
    func streamConnected() {}
    func streamReceivedBeforeWrite() {}
}

extension SocketStream {
    /// Why a stream failed, for every broken connection (refused, reset, a TLS error).
    static let brokenText = "connection failed (refused, reset or TLS)"

    /// Under TLS, past this many unsent bytes the socket is not read until the write event
    /// has sent them down (a peer sending records OpenSSL answers, and never reading).
    static let maxUnsentWhileReading = 256 << 10

    /// What became of a ``send(_:unlessInputWaiting:)``.
    enum SendOutcome: Equatable {
        /// Sent, or queued behind the connect, the handshake or the socket's room.
        case accepted
        /// The connection is known to be broken.
        case failed
        /// Nothing was written: bytes (or the peer's end) were waiting to be read.
        case inputWaiting
    }
}
