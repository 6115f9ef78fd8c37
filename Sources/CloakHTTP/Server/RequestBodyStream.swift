/// How the server hands a request's body to its handler, decided from the request's method and
/// path before any of the body is read.
public enum RequestBodyDelivery: Sendable, Equatable {
    /// Read whole first, at most ``HTTPServerConfiguration/maxBodyBytes`` (every endpoint that
    /// does not say otherwise).
    case whole
    /// Handed to the handler as it arrives (``HTTPRequest/bodyStream``), at most `maxBytes` in
    /// all: a length over it is answered 413 on the head, a chunked body that grows past it fails
    /// its stream and is answered 413.
    case streamed(maxBytes: Int)
}

/// A request's body, handed out as it arrives. The handler pulls: ``next(_:)`` asks for the next
/// piece, and the connection reads from its socket only while a piece is asked for. A handler
/// that is behind therefore holds the client back through TCP, and at most one read (16 KiB) of
/// the body is in the server's memory at a time, however large the body.
///
/// Every ``next(_:)`` is answered exactly once, on the request's loop thread: a piece of bytes,
/// the end, or a failure (the body broke a rule or grew past its limit: the answer then has that
/// violation's status whatever the handler says; or the connection ended). After the end or a
/// failure every call gets the same again. An answer given before the end closes the connection
/// once written; the rest of the body is never read.
public final class RequestBodyStream: Sendable {
    public enum Piece: Sendable, Equatable {
        case bytes([UInt8])
        case end
        /// The body cannot be read whole: `violation` is why (nil: the connection closed or timed out).
        case failed(HTTPViolation?)
    }

    private let worker: LoopWorker
    private let connection: UInt64
    private let serial: UInt64

    init(worker: LoopWorker, connection: UInt64, serial: UInt64) {
        self.worker = worker
        self.connection = connection
        self.serial = serial
    }

    /// Asks for the next piece; `receive` is called once, on the request's loop thread.
    public func next(_ receive: @escaping @Sendable (Piece) -> Void) {
        worker.execute { [worker, connection, serial] in
            guard let open = worker.state.value.connections[connection] else { return receive(.failed(nil)) }
            open.pullBody(for: serial, receive)
        }
    }
}
