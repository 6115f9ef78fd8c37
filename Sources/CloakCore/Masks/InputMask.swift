/// A Basis Theory element mask: one entry per position, a literal or a one-character regex.
///
/// On the device the mask restricts typing; on the server it is applied to the whole submitted
/// string: literals are filled in (and consumed when the client already typed them), characters
/// that fit no position are dropped, and the value is complete only when every position is filled
/// and nothing is left over. An incomplete value is invalid (``ValidationErrorString/maskIncomplete``).
public struct InputMask: Sendable {
    public enum Position: Sendable {
        case literal(Character)
        case pattern(RegexPattern)
    }

    public let positions: [Position]

    public init(_ positions: [Position]) {
        self.positions = positions
    }

    /// The masked value, and whether it fills the mask exactly.
    public func apply(_ input: String) -> (value: String, isComplete: Bool) {
        var out = ""
        var position = 0
        var chars = input.makeIterator()
        var pending = chars.next()
        while let ch = pending {
            guard position < positions.count else { return (out, false) }  // longer than the mask
            switch positions[position] {
            case let .literal(l):
                out.append(l)
                position += 1
                if ch == l { pending = chars.next() }
            case let .pattern(p):
                if p.wholeMatch(String(ch)) {
                    out.append(ch)
                    position += 1
                }
                pending = chars.next()
            }
        }
        while position < positions.count, case let .literal(l) = positions[position] {
            out.append(l)
            position += 1
        }
        return (out, position == positions.count && !input.isEmpty)
    }
}

/// A Basis Theory transform: every match of `matcher` replaced by `replacement` (default "").
public struct InputTransform: Sendable {
    public let matcher: RegexPattern
    public let replacement: String

    public init(matcher: RegexPattern, replacement: String = "") {
        self.matcher = matcher
        self.replacement = replacement
    }

    public func apply(_ value: String) -> String { matcher.replacingMatches(in: value, with: replacement) }
}
