/// A body handed out piece by piece, each asked for (``next(_:)``): a request's body as the
/// client sends it, a file out of the vault as it is unsealed. The one pull stream of CloakHTTP
/// (issue 58): whoever produces does so only while asked (or, reading ahead, while under its
/// ``Watermarks``), so a slow consumer holds the producer back and memory stays bounded.
///
/// Every ``next(_:)`` is answered exactly once: a piece of bytes, the end, or a failure. After
/// the end or a failure every call gets the same again.
public final class BodyStream: Sendable {
    public enum Piece: Sendable, Equatable {
        case bytes([UInt8])
        case end
        /// The body cannot be had whole: `violation` is why when the client broke a rule (the
        /// answer then has that status whatever the handler says); nil when the connection
        /// ended, timed out, or a producer failed.
        case failed(HTTPViolation?)

        /// The end or a failure: what every later ask gets.
        var isFinal: Bool {
            if case .bytes = self { return false }
            return true
        }
    }

    private let produce: @Sendable (@escaping @Sendable (Piece) -> Void) -> Void

    /// - Parameter produce: asked for the next piece; calls its argument once. A request's
    ///   stream answers on the request's loop thread; a producer for an answer or an upstream
    ///   request answers on any thread (the connection moves it to its own loop).
    public init(_ produce: @escaping @Sendable (@escaping @Sendable (Piece) -> Void) -> Void) {
        self.produce = produce
    }

    /// Asks for the next piece; `receive` is called once.
    public func next(_ receive: @escaping @Sendable (Piece) -> Void) { produce(receive) }
}
