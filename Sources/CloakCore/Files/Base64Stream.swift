/// Decodes base64 as it arrives (a file sent as base64 inside JSON, as the VGS SDK's `sendFile`
/// does), strictly: the standard alphabet, `=` padding only at the end, and nothing else (no
/// whitespace, no URL-safe characters, no data after the padding). Pure and incremental: feed
/// it the text in pieces, take the bytes it returns, then ``finish()``.
public struct Base64Stream: Sendable {
    public enum Failure: Error, Sendable, Equatable {
        /// A character outside the alphabet, or data after the padding.
        case invalidCharacter
        /// The text does not end on a whole group (or its padding is wrong).
        case truncated
    }

    private var quad: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    /// Characters of the current group so far, and how many of them were `=`.
    private var filled = 0
    private var padInGroup = 0
    /// A padded group ended the text: nothing more may come.
    private var finished = false
    private var failed: Failure?
    /// Bytes decoded so far.
    public private(set) var decodedCount = 0

    public init() {}

    /// Decodes `text` (ASCII bytes), appending what it makes to `out`.
    public mutating func feed(_ text: some Collection<UInt8>, into out: inout [UInt8]) throws(Failure) {
        if let failed { throw failed }
        for c in text {
            guard !finished else { return try fail(.invalidCharacter) }
            var value: UInt8 = 0
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                // Padding: the third and fourth characters of the last group, or the fourth.
                guard filled >= 2 else { return try fail(.invalidCharacter) }
                padInGroup += 1
            default:
                return try fail(.invalidCharacter)
            }
            if c != UInt8(ascii: "="), padInGroup > 0 { return try fail(.invalidCharacter) }
            switch filled {
            case 0: quad.0 = value
            case 1: quad.1 = value
            case 2: quad.2 = value
            default: quad.3 = value
            }
            filled += 1
            guard filled == 4 else { continue }
            let made = 3 - padInGroup
            let bytes: [UInt8] = [quad.0 << 2 | quad.1 >> 4, quad.1 << 4 | quad.2 >> 2, quad.2 << 6 | quad.3]
            out.append(contentsOf: bytes.prefix(made))
            decodedCount += made
            finished = padInGroup > 0
            filled = 0
            padInGroup = 0
        }
    }

    /// The text ended: throws unless it ended on a whole group.
    public func finish() throws(Failure) {
        if let failed { throw failed }
        guard filled == 0 else { throw .truncated }
    }

    private mutating func fail(_ failure: Failure) throws(Failure) {
        failed = failure
        throw failure
    }
}
