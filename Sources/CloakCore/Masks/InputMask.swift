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
    /// The mask over ASCII bytes, when every literal is ASCII: each pattern position's answer for
    /// every ASCII character, asked of the pattern itself once, here. Input of ASCII characters
    /// (but CR, which joins LF into one character) is then masked byte by byte with the same
    /// result as ``apply(_:)`` character by character.
    private let asciiPlan: [ASCIIPosition]?

    private enum ASCIIPosition: Sendable {
        case literal(UInt8)
        /// Bit `c` set when the pattern matches the one-character string of ASCII `c`.
        case pattern(low: UInt64, high: UInt64)

        func matches(_ c: UInt8) -> Bool {
            guard case let .pattern(low, high) = self else { return false }
            return c < 64 ? low & (1 << c) != 0 : high & (1 << (c - 64)) != 0
        }
    }

    public init(_ positions: [Position]) {
        self.positions = positions
        var plan: [ASCIIPosition]? = []
        for position in positions {
            switch position {
            case let .literal(l):
                // One ASCII scalar, not CR (CR LF is one Character whose asciiValue is LF's).
                if l.unicodeScalars.count == 1, let a = l.asciiValue, a != 0x0D {
                    plan?.append(.literal(a))
                } else {
                    plan = nil
                }
            case let .pattern(p):
                var low: UInt64 = 0
                var high: UInt64 = 0
                for c in UInt8(0)..<128 where p.wholeMatch(String(UnicodeScalar(c))) {
                    if c < 64 { low |= 1 << c } else { high |= 1 << (c - 64) }
                }
                plan?.append(.pattern(low: low, high: high))
            }
        }
        self.asciiPlan = plan
    }

    /// The masked value, and whether it fills the mask exactly.
    public func apply(_ input: String) -> (value: String, isComplete: Bool) {
        if let asciiPlan {
            var copy = input
            let masked = copy.withUTF8 { bytes -> (value: String, isComplete: Bool)? in
                guard bytes.allSatisfy({ $0 < 0x80 && $0 != 0x0D }) else { return nil }
                var complete = false
                // Each input byte yields at most itself plus the literals before the next position.
                let value = String(unsafeUninitializedCapacity: asciiPlan.count) { out in
                    var position = 0
                    var cursor = 0
                    while cursor < bytes.count {
                        guard position < asciiPlan.count else { return position }  // longer than the mask
                        let c = bytes[cursor]
                        switch asciiPlan[position] {
                        case let .literal(l):
                            out[position] = l
                            position += 1
                            if c == l { cursor += 1 }
                        case .pattern:
                            if asciiPlan[position].matches(c) {
                                out[position] = c
                                position += 1
                            }
                            cursor += 1
                        }
                    }
                    while position < asciiPlan.count, case let .literal(l) = asciiPlan[position] {
                        out[position] = l
                        position += 1
                    }
                    complete = position == asciiPlan.count && !bytes.isEmpty
                    return position
                }
                return (value, complete)
            }
            if let masked { return masked }
        }
        return applyByCharacter(input)
    }

    /// ``apply(_:)`` one character at a time: any input, any mask.
    func applyByCharacter(_ input: String) -> (value: String, isComplete: Bool) {
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
