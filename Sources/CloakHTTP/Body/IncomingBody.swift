/// A streamed body between the socket and its consumer, as a value (issue 58): pieces read
/// ahead of the consumer within ``Watermarks``, the consumer's ask, how the body ended, and the
/// limit on what may come. Pure: the connection's state machine holds one and says what to do.
///
/// - Reading goes on while ``wantsInput``: under the high watermark, or while the consumer
///   waits with nothing buffered; it stops at the high mark and resumes once the consumer took
///   the buffer down to the low one.
/// - One ask at a time: a second ask while one waits is answered `.failed(nil)`.
/// - What is buffered is one run of bytes (reads merge into it, however small each was: a client
///   sending one-byte chunks cannot make thousands of pieces), and an ask takes all of it.
/// - The end or a failure is given after the bytes before it, and to every later ask.
struct IncomingBody: Equatable {
    let limit: Int
    let watermarks: Watermarks
    /// The body's bytes received so far (whether handed out or buffered).
    private(set) var received = 0
    /// The bytes read and not handed out yet.
    private var buffered: [UInt8] = []
    var bufferedBytes: Int { buffered.count }
    /// The consumer asked and waits for a piece.
    private(set) var isAsked = false
    /// Over the high watermark: reading stopped until the consumer takes the buffer to the low one.
    private var isHeldBack = false
    /// How the body ended (the end, or a failure), once it did.
    private(set) var final: BodyStream.Piece?

    init(limit: Int, watermarks: Watermarks = .requestBody) {
        self.limit = limit
        self.watermarks = watermarks
    }

    /// Whether the socket should be read for this body.
    var wantsInput: Bool { final == nil && !isHeldBack }

    /// What a piece offered to the body becomes.
    enum Offered: Equatable {
        /// Kept in the buffer (or dropped after the body ended).
        case kept
        /// The consumer was waiting: hand it this piece.
        case deliver(BodyStream.Piece)
        /// The bytes take the body past its limit: it fails (the consumer gets the failure).
        case overLimit
    }

    /// Bytes read from the socket.
    mutating func append(_ bytes: [UInt8]) -> Offered {
        guard final == nil else { return .kept }
        received += bytes.count
        guard received <= limit else { return .overLimit }
        return offer(.bytes(bytes))
    }

    /// The body ended or failed (the consumer gets it after what is buffered).
    mutating func finish(_ piece: BodyStream.Piece) -> Offered {
        guard final == nil, piece.isFinal else { return .kept }
        final = piece
        return offer(piece)
    }

    private mutating func offer(_ piece: BodyStream.Piece) -> Offered {
        if isAsked && buffered.isEmpty {
            isAsked = false
            return .deliver(piece)
        }
        // A final piece waits in ``final`` behind the buffered bytes.
        if case .bytes(let bytes) = piece {
            buffered += bytes
            if buffered.count >= watermarks.high { isHeldBack = true }
        }
        return .kept
    }

    /// The consumer asks for the next piece: one now, or nil (it waits; a piece that comes is
    /// delivered through ``append(_:)`` or ``finish(_:)``).
    mutating func ask() -> BodyStream.Piece? {
        if isAsked { return .failed(nil) }  // one ask at a time
        if !buffered.isEmpty {
            let bytes = buffered
            buffered = []
            isHeldBack = false  // nothing is buffered now: under the low watermark
            return .bytes(bytes)
        }
        if let final { return final }
        isAsked = true
        return nil
    }
}
