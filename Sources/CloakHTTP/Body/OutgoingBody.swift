/// A streamed body going out (an answer's, an upstream request's), as a value: the producer,
/// the bytes it still owes, and whether a piece is asked for, written once for every
/// connection (issue 58). Pure: the connection reports what its transport did and what the
/// producer gave, and carries out what it is told.
///
/// The next piece is asked for once what the transport has not sent is down to the low
/// watermark, so the producer works while the socket sends, and at most one piece plus the
/// low watermark is in memory. A producer that fails, or gives more or fewer bytes than it
/// promised, breaks the body: the connection closes mid-message, which the peer sees as a
/// truncated message, never as a whole one.
struct OutgoingBody: Equatable {
    enum Action: Equatable {
        case none
        /// Ask the producer for its next piece.
        case pull
        /// Give these bytes to the transport.
        case send([UInt8])
        /// The last byte was given to the transport: the message is complete once it has left.
        case finished
        /// The body is broken: close the connection, mid-message.
        case broken(Broken)
    }

    /// Why a body broke, as "the body …" goes on.
    enum Broken: Equatable, CustomStringConvertible {
        case longerThanPromised
        case shorterThanPromised
        case producerFailed

        var description: String {
            switch self {
            case .longerThanPromised, .shorterThanPromised: "did not have its promised length"
            case .producerFailed: "could not be produced"
            }
        }
    }

    let watermarks: Watermarks
    /// The bytes still owed.
    private(set) var remaining: Int
    private(set) var isPulling = false
    /// Finished or broken: nothing more is asked for.
    private(set) var isDone = false

    init(length: Int, watermarks: Watermarks = .outgoingBody) {
        remaining = length
        self.watermarks = watermarks
    }

    /// The transport holds `unsent` bytes not yet in the socket (after a send, or as it drains).
    mutating func sent(unsent: Int) -> Action {
        guard !isDone, !isPulling, unsent <= watermarks.low else { return .none }
        isPulling = true
        return .pull
    }

    /// The producer's answer to the last pull.
    mutating func received(_ piece: BodyStream.Piece) -> Action {
        guard !isDone, isPulling else { return .none }
        isPulling = false
        switch piece {
        case .bytes(let bytes):
            guard bytes.count <= remaining else { return broken(.longerThanPromised) }
            remaining -= bytes.count
            return .send(bytes)
        case .end:
            guard remaining == 0 else { return broken(.shorterThanPromised) }
            isDone = true
            return .finished
        case .failed:
            return broken(.producerFailed)
        }
    }

    private mutating func broken(_ why: Broken) -> Action {
        isDone = true
        return .broken(why)
    }
}
