/// Reads a `multipart/form-data` body (RFC 7578, RFC 2046 5.1) as it arrives: each part's head,
/// then its bytes as ranges of what was given (never copied, never the whole body), then its end.
/// Pure and incremental, as the server's request parser is: ``parse(_:)`` takes the bytes there
/// are and returns how many it consumed and one event; the caller keeps what was not consumed and
/// calls again with more appended. Bytes that might begin a boundary are left unconsumed until
/// the next bytes tell. The events do not depend on how the body was cut.
///
/// Strict, so that two readers cannot see different parts: lines end in CRLF; the body starts
/// with the first boundary (a preamble is refused, as is anything after the closing boundary but
/// CRLF); every part has exactly one `Content-Disposition: form-data` with a `name`; part heads
/// are bounded (``Limits``); a truncated body never ends (``finish()`` refuses it).
public struct MultipartParser: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Parts in the body.
        public var maxParts: Int
        /// Bytes of one part's head.
        public var maxHeadBytes: Int

        public init(maxParts: Int = 64, maxHeadBytes: Int = 4096) {
            self.maxParts = maxParts
            self.maxHeadBytes = maxHeadBytes
        }
    }

    /// A part's head.
    public struct PartHead: Sendable, Equatable {
        public var name: String
        /// Set for a file part (possibly empty: a file input left empty).
        public var fileName: String?
        /// The part's `Content-Type`, as sent (a hint only).
        public var contentType: String?
    }

    public enum Event: Sendable, Equatable {
        /// Everything given that could be read was consumed: give more (with what was not).
        case needMore
        case partBegun(PartHead)
        /// Bytes of the current part: this range of the bytes given.
        case bytes(Range<Int>)
        case partEnded
        /// The closing boundary was read: the body is complete.
        case end
        case violation(Violation)
    }

    public enum Violation: Error, Sendable, Equatable, CustomStringConvertible {
        case missingBoundary
        case malformedPartHead
        case partHeadTooLarge
        case tooManyParts
        case missingName
        case trailingBytes
        case truncated

        public var description: String {
            switch self {
            case .missingBoundary: "the body does not start with its boundary"
            case .malformedPartHead: "a part's head is not Content-Disposition: form-data with a name"
            case .partHeadTooLarge: "a part's head is too large"
            case .tooManyParts: "too many parts"
            case .missingName: "a part without a name"
            case .trailingBytes: "bytes after the closing boundary"
            case .truncated: "the body ends before its closing boundary"
            }
        }
    }

    enum Stage: Equatable {
        /// `--boundary` then CRLF (or `--` for an empty body).
        case first
        case head
        /// Part bytes until `CRLF--boundary`.
        case data
        /// After a delimiter: CRLF (another part) or `--` (the end).
        case afterDelimiter
        /// After the closing boundary: a CR may follow, then its LF, then nothing.
        case done
        case epilogue
        case closed
        case violated(Violation)
    }

    public let limits: Limits
    /// `--` and the boundary.
    let dashBoundary: [UInt8]
    /// CRLF, `--` and the boundary: what ends a part's data.
    let delimiter: [UInt8]
    var stage = Stage.first
    var head: [UInt8] = []
    var parts = 0

    /// A parser for bodies whose boundary is `boundary` (from ``boundary(contentType:)``).
    public init(boundary: [UInt8], limits: Limits = Limits()) {
        self.limits = limits
        dashBoundary = Array("--".utf8) + boundary
        delimiter = [13, 10] + dashBoundary
    }

    /// Whether the closing boundary was read.
    public var isComplete: Bool { stage == .done || stage == .closed }

    /// The body ended: nil when it was complete, else why not.
    public func finish() -> Violation? {
        if case .violated(let violation) = stage { return violation }
        return isComplete ? nil : .truncated
    }

    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> (consumed: Int, event: Event) {
        let n = bytes.count
        switch stage {
        case .violated(let violation):
            return (n, .violation(violation))
        case .done, .epilogue, .closed:
            // Only a final CRLF may follow the closing boundary.
            for i in 0..<n {
                switch (stage, bytes[i]) {
                case (.done, 13): stage = .epilogue
                case (.epilogue, 10): stage = .closed
                default: return refuse(.trailingBytes, n)
                }
            }
            return (n, .needMore)
        case .first:
            guard n >= dashBoundary.count + 2 else {
                return startsLike(bytes, dashBoundary) ? (0, .needMore) : refuse(.missingBoundary, n)
            }
            guard equal(bytes, 0, dashBoundary) else { return refuse(.missingBoundary, n) }
            stage = .afterDelimiter
            return (dashBoundary.count, .needMore)
        case .afterDelimiter:
            guard n >= 2 else { return (0, .needMore) }
            if bytes[0] == 45 && bytes[1] == 45 {
                stage = .done
                return (2, .end)
            }
            guard bytes[0] == 13 && bytes[1] == 10 else { return refuse(.missingBoundary, n) }
            guard parts < limits.maxParts else { return refuse(.tooManyParts, n) }
            parts += 1
            stage = .head
            head.removeAll(keepingCapacity: true)
            return (2, .needMore)
        case .head:
            var i = 0
            while i < n {
                head.append(bytes[i])
                i += 1
                if head.count > limits.maxHeadBytes { return refuse(.partHeadTooLarge, n) }
                // Lines end in CRLF: a bare LF, or a CR before anything else, is refused at once.
                let count = head.count
                if head[count - 1] == 10 && (count < 2 || head[count - 2] != 13) {
                    return refuse(.malformedPartHead, n)
                }
                if count >= 2 && head[count - 2] == 13 && head[count - 1] != 10 { return refuse(.malformedPartHead, n) }
                if head.count >= 4 && head[(head.count - 4)...].elementsEqual([13, 10, 13, 10]) {
                    guard let partHead = readHead() else { return refuse(.malformedPartHead, n) }
                    guard !partHead.name.isEmpty else { return refuse(.missingName, n) }
                    stage = .data
                    return (i, .partBegun(partHead))
                }
                // A head of no fields: CRLF at once.
                if head == [13, 10] {
                    return refuse(.malformedPartHead, n)
                }
            }
            return (n, .needMore)
        case .data:
            // Data runs to the first delimiter; bytes that could begin one wait for more.
            var i = 0
            while i < n {
                if bytes[i] == 13 {
                    let available = n - i
                    if available >= delimiter.count {
                        if equal(bytes, i, delimiter) {
                            if i > 0 { return (i, .bytes(0..<i)) }
                            stage = .afterDelimiter
                            return (delimiter.count, .partEnded)
                        }
                    } else if startsLike(UnsafeRawBufferPointer(rebasing: bytes[i...]), delimiter) {
                        // Maybe a delimiter: what comes before it is data; it waits.
                        return i > 0 ? (i, .bytes(0..<i)) : (0, .needMore)
                    }
                }
                i += 1
            }
            return n > 0 ? (n, .bytes(0..<n)) : (0, .needMore)
        }
    }

    mutating func refuse(_ violation: Violation, _ n: Int) -> (consumed: Int, event: Event) {
        stage = .violated(violation)
        return (n, .violation(violation))
    }

    func equal(_ bytes: UnsafeRawBufferPointer, _ at: Int, _ pattern: [UInt8]) -> Bool {
        guard bytes.count - at >= pattern.count else { return false }
        for k in 0..<pattern.count where bytes[at + k] != pattern[k] { return false }
        return true
    }

    /// Whether `bytes` (shorter than `pattern`) are its beginning.
    func startsLike(_ bytes: UnsafeRawBufferPointer, _ pattern: [UInt8]) -> Bool {
        for k in 0..<min(bytes.count, pattern.count) where bytes[k] != pattern[k] { return false }
        return true
    }

}
