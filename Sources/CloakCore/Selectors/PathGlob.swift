/// A path pattern of an egress route: `*` stands for any run of characters, `/` included
/// (`/v1/*` matches `/v1/charges` and `/v1/payment_intents/pi_1/confirm`); every other character
/// matches itself. Patterns are compared with the path as the client sent it (still
/// percent-encoded), so `%2F` never passes for a `/` the pattern names.
public struct PathGlob: Sendable, Equatable, CustomStringConvertible {
    /// The literal pieces between the stars.
    let pieces: [[UInt8]]
    public let description: String

    /// - Throws: ``SelectorError`` when the pattern does not start with `/`.
    public init(_ text: String) throws(SelectorError) {
        guard text.hasPrefix("/") else { throw SelectorError("a path pattern starts with /") }
        guard
            !text.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
        else {
            throw SelectorError("a path pattern has no spaces, controls, ? or #")
        }
        description = text
        pieces = text.utf8.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false).map(Array.init)
    }

    /// Whether `path` matches the whole pattern.
    public func matches(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard pieces.count > 1 else { return bytes == pieces[0] }
        guard bytes.starts(with: pieces[0]) else { return false }
        var position = pieces[0].count
        // Middle pieces: leftmost match each (greedy stars are not needed for a literal tail).
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = Self.find(piece, in: bytes, from: position) else { return false }
            position = found + piece.count
        }
        let last = pieces[pieces.count - 1]
        return bytes.count - position >= last.count && bytes.suffix(last.count).elementsEqual(last)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count - start >= needle.count else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
