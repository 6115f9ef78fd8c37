/// A mask a policy shows a value through (issue 77). A mask keeps the value's shape (its
/// separators, its length) and hides at least ``minimumHidden`` of its characters; a value that
/// does not fit the mask (too short, another shape) is redacted, never shown.
enum ValueMask: Sendable, Equatable {
    /// The last four digits: `************1111`.
    case last4
    /// The BIN (six digits) and the last four, only on values of 15 digits or more: `411111******1111`.
    case binLast4
    /// A pattern: `#` shows the value's character there, `*` hides it, anything else must be the
    /// value's own character (`***-**-####` for an SSN).
    case pattern(String)

    /// What a redacted value reads.
    static let redacted = "[redacted]"
    /// The character a hidden one reads.
    static let hidden: Character = "*"
    /// A mask that would hide fewer characters than this shows nothing (a card's five digits).
    static let minimumHidden = 5
    /// What `last4` and `bin_last4` let stand between digits (a card or an account as written).
    static let separators: Set<Character> = [" ", "-", ".", "/"]

    /// The mask a configuration names: `last4`, `bin_last4`, or a pattern of `#`, `*` and
    /// separators; nil for anything else.
    init?(name: String) {
        switch name {
        case "last4": self = .last4
        case "bin_last4": self = .binLast4
        default:
            guard name.contains("#"), name.contains("*"), name.count <= 64,
                name.allSatisfy({ $0 == "#" || $0 == "*" || $0 == "-" || $0 == " " || $0 == "/" || $0 == "." })
            else { return nil }
            self = .pattern(name)
        }
    }

    /// Characters shown at most.
    var shown: Int {
        switch self {
        case .last4: 4
        case .binLast4: 10
        case let .pattern(pattern): pattern.filter { $0 == "#" }.count
        }
    }

    /// Its place among masks that show as many characters (ties in ``ValueTransform``).
    var order: Int {
        switch self {
        case .last4: 0
        case .binLast4: 1
        case .pattern: 2
        }
    }

    /// `value` through the mask, or ``redacted`` when it does not fit.
    func apply(_ value: String) -> String {
        let characters = Array(value)
        switch self {
        case .last4, .binLast4:
            // Digits and separators only: a letter or another script's digit would pass unmasked.
            guard characters.allSatisfy({ ($0.isASCII && $0.isNumber) || Self.separators.contains($0) }) else {
                return Self.redacted
            }
            let digits = characters.indices.filter { characters[$0].isASCII && characters[$0].isNumber }
            let keepFirst = self == .binLast4 ? 6 : 0
            guard self == .last4 || digits.count >= 15 else { return Self.redacted }
            guard digits.count - keepFirst - 4 >= Self.minimumHidden else { return Self.redacted }
            var out = characters
            for (rank, index) in digits.enumerated() where rank >= keepFirst && rank < digits.count - 4 {
                out[index] = Self.hidden
            }
            return String(out)
        case let .pattern(pattern):
            let shape = Array(pattern)
            guard shape.count == characters.count else { return Self.redacted }
            var out: [Character] = []
            var hidden = 0
            for (mark, character) in zip(shape, characters) {
                switch mark {
                case "#": out.append(character)
                case "*":
                    guard character.isLetter || character.isNumber else { return Self.redacted }
                    out.append(Self.hidden)
                    hidden += 1
                default:
                    guard mark == character else { return Self.redacted }
                    out.append(character)
                }
            }
            return hidden >= Self.minimumHidden ? String(out) : Self.redacted
        }
    }
}
