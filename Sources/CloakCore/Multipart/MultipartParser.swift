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

    private enum Stage: Equatable {
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
    private let dashBoundary: [UInt8]
    /// CRLF, `--` and the boundary: what ends a part's data.
    private let delimiter: [UInt8]
    private var stage = Stage.first
    private var head: [UInt8] = []
    private var parts = 0

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

    private mutating func refuse(_ violation: Violation, _ n: Int) -> (consumed: Int, event: Event) {
        stage = .violated(violation)
        return (n, .violation(violation))
    }

    private func equal(_ bytes: UnsafeRawBufferPointer, _ at: Int, _ pattern: [UInt8]) -> Bool {
        guard bytes.count - at >= pattern.count else { return false }
        for k in 0..<pattern.count where bytes[at + k] != pattern[k] { return false }
        return true
    }

    /// Whether `bytes` (shorter than `pattern`) are its beginning.
    private func startsLike(_ bytes: UnsafeRawBufferPointer, _ pattern: [UInt8]) -> Bool {
        for k in 0..<min(bytes.count, pattern.count) where bytes[k] != pattern[k] { return false }
        return true
    }

    /// The head's fields: `Content-Disposition` (once, `form-data`, a name, maybe a file name)
    /// and `Content-Type` (at most once); others are ignored. nil for anything malformed.
    private func readHead() -> PartHead? {
        // Every field line with its CRLF; the head's empty line left out.
        let text = head.dropLast(2)
        var disposition: PartHead?
        var contentType: String?
        for line in text.split(separator: 10, omittingEmptySubsequences: false).dropLast() {
            guard line.last == 13 else { return nil }
            let field = line.dropLast()
            guard let colon = field.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = String(decoding: field[..<colon], as: UTF8.self).lowercased()
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
            let value = String(decoding: field[(colon + 1)...], as: UTF8.self).trimmingSpaces()
            guard value.unicodeScalars.allSatisfy({ $0.value >= 32 && $0.value != 127 }) else { return nil }
            switch name {
            case "content-disposition":
                guard disposition == nil, let parsed = Self.disposition(value) else { return nil }
                disposition = parsed
            case "content-type":
                guard contentType == nil else { return nil }
                contentType = value
            default:
                continue
            }
        }
        guard var result = disposition else { return nil }
        result.contentType = contentType
        return result
    }

    /// `form-data; name="…"; filename="…"` (values quoted or tokens; a quoted value has no `"`:
    /// browsers send it as `%22`).
    static func disposition(_ value: String) -> PartHead? {
        var rest = Substring(value)
        guard let semicolon = rest.firstIndex(of: ";") ?? Optional(rest.endIndex),
            rest[..<semicolon].trimmingSpaces().lowercased() == "form-data"
        else { return nil }
        rest = rest[semicolon...]
        var name: String?
        var fileName: String?
        while let first = rest.first, first == ";" {
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = rest[..<equals].lowercased()
            rest = rest[rest.index(after: equals)...]
            var parameter: String
            if rest.first == "\"" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else { return nil }
                parameter = String(rest[..<close])
                rest = rest[rest.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parameter = String(rest[..<end]).trimmingSpaces()
                rest = rest[end...]
            }
            rest = rest.drop { $0 == " " || $0 == "\t" }
            switch key {
            case "name":
                guard name == nil else { return nil }
                name = parameter
            case "filename":
                guard fileName == nil else { return nil }
                fileName = parameter
            case "filename*":
                return nil  // not sent by browsers for form-data (RFC 7578 4.2): refused, not guessed
            default:
                continue
            }
        }
        guard rest.isEmpty, let name else { return nil }
        return PartHead(name: name, fileName: fileName, contentType: nil)
    }

    /// The boundary of a `multipart/form-data` `Content-Type` (1 to 70 of RFC 2046's `bchars`,
    /// quoted or not); nil for another type or a boundary that breaks the rules.
    /// RFC 2046's `bchars`.
    private static let boundaryBytes = Set(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)

    public static func boundary(contentType: String) -> [UInt8]? {
        let parts = contentType.split(separator: ";").map { $0.trimmingSpaces() }
        guard parts.first?.lowercased() == "multipart/form-data" else { return nil }
        var found: [UInt8]?
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "=") else { return nil }
            guard parameter[..<equals].lowercased() == "boundary" else { continue }
            guard found == nil else { return nil }
            var value = parameter[parameter.index(after: equals)...]
            if value.first == "\"" {
                guard value.count >= 2, value.last == "\"" else { return nil }
                value = value.dropFirst().dropLast()
            }
            let bytes = Array(value.utf8)
            guard (1...70).contains(bytes.count), bytes.allSatisfy(boundaryBytes.contains), bytes.last != 32 else {
                return nil
            }
            found = bytes
        }
        return found
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
