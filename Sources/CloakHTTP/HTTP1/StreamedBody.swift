/// A body produced as it is sent (a file out of the vault), for an answer
/// (``HTTPResponse/bodySource``) or a request upstream (``UpstreamRequest/bodySource``): the
/// connection asks for the next piece only once the previous one has left, so a slow reader
/// holds back the producer and at most one piece is in memory. The length is promised in the
/// head; a producer that fails, or gives more or fewer bytes than promised, has the connection
/// closed mid-body, which the peer sees as a truncated message (never as a whole one).
///
/// The server's connections take pieces on any thread; the upstream client's only on its loop
/// thread (producers there answer on the request's loop, as the vault client does).
public final class StreamedBody: Sendable {
    public enum Piece: Sendable, Equatable {
        case bytes([UInt8])
        case end
        case failed
    }

    private let produce: @Sendable (@escaping @Sendable (Piece) -> Void) -> Void

    /// - Parameter produce: asked for the next piece; calls its argument once, on any thread.
    public init(_ produce: @escaping @Sendable (@escaping @Sendable (Piece) -> Void) -> Void) {
        self.produce = produce
    }

    func next(_ receive: @escaping @Sendable (Piece) -> Void) { produce(receive) }
}
