/// An answer's body produced as it is sent (a file out of the vault): the connection pulls the
/// next piece only once the previous one has left, so a slow client holds back the producer and
/// at most one piece is in the server's memory. The length is promised in the head
/// (``HTTPResponse/streamedLength``); a producer that fails, or gives more or fewer bytes than
/// promised, has the connection closed mid-body, which the client sees as a truncated answer
/// (never as a whole one).
public final class ResponseBodySource: Sendable {
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
