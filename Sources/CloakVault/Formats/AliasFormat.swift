import CloakCore

/// What each alias format keeps of the value and how it makes the rest.
///
/// | format | input | keeps | the rest |
/// |---|---|---|---|
/// | UUID | any | nothing | `tok_<env>_` + 22 base58 characters of 128 random bits |
/// | RAW_UUID | any | nothing | a random UUID (version 4, lower case) |
/// | GENERIC_T_FOUR | ≥ 4 letters/digits | last four letters/digits | `tok_<env>_` + 18 base58 characters |
/// | FPE_SIX_T_FOUR | card: 12–19 digits | length, separators, first six, last four | FF1, Luhn-valid by default |
/// | FPE_T_FOUR | card: 12–19 digits | length, separators, last four | FF1, Luhn-valid by default |
/// | PFPT | card: 12–19 digits | length, separators, last four; starts with 99 | FF1, Luhn-valid by default |
/// | FPE_ACC_NUM_T_FOUR | ≥ 6 digits | length, separators, last four | FF1 over digits |
/// | FPE_SSN_T_FOUR | SSN: 9 digits | separators, last four | five digits |
/// | NUM_LENGTH_PRESERVING | digits | length, separators | FF1 over digits |
/// | FPE_ALPHANUMERIC_ACC_NUM_T_FOUR | ≥ 6 letters/digits | length, separators, last four | FF1 over 0-9A-Za-z |
/// | ALPHANUMERIC_LENGTH_PRESERVING | letters/digits | length, separators | FF1 over 0-9A-Za-z |
/// | ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR | ≥ 6 letters/digits | length, separators, last four | FF1 over 0-9A-Za-z |
/// | ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR | ≥ 12 letters/digits | length, separators, first six, last four | FF1 over 0-9A-Za-z |
/// | ALPHANUMERIC_SIX_T_FOUR | ≥ 12 letters/digits | first six, last four (separators dropped) | FF1 over 0-9A-Za-z |
/// | ALPHANUMERIC_SSN_T_FOUR | SSN: 9 digits | separators, last four | five of 0-9A-Z |
///
/// Where the free characters give FF1 a domain under 1,000,000 (NIST SP 800-38G Rev. 1's
/// minimum, e.g. a 15-digit Amex keeps only five free digits, a CVC three), they are drawn at
/// random instead.
struct AliasFormat: Sendable {
    enum Kind: Sendable {
        case token(keepLastFour: Bool)
        case rawUUID
        case preserving

        var isPreserving: Bool {
            if case .preserving = self { return true }
            return false
        }
    }

    /// The most slots a format-preserving format takes. FF1 costs grow with the square of the
    /// length (4,096 digits took tens of milliseconds); 64 covers every account number.
    static let maxPreservingSlots = 64

    enum Alphabet: Sendable {
        case digits, alphanumeric62, upperAlphanumeric36

        var radix: Int {
            switch self {
            case .digits: return 10
            case .alphanumeric62: return 62
            case .upperAlphanumeric36: return 36
            }
        }
    }

    let name: AliasFormatName
    let kind: Kind
    /// Which characters of the input are slots (the rest are separators).
    let inputAlphabet: Alphabet
    /// The alphabet the free slots are written in.
    let outputAlphabet: Alphabet
    let keepFirst: Int
    let keepLast: Int
    /// Slot count limits of the input.
    let minSlots: Int
    let maxSlots: Int
    /// Whether the alias is a card number whose Luhn validity is configured.
    let isCard: Bool
    /// Digits forced at the start of the alias (PFPT: "99").
    let forcedPrefix: [UInt8]
    /// Whether separators stay in place (false: the alias is the slots alone).
    let keepsSeparators: Bool

    static func of(_ name: AliasFormatName) -> AliasFormat {
        func p(
            _ input: Alphabet, _ output: Alphabet? = nil, first: Int = 0, last: Int = 0, min: Int,
            max: Int = maxPreservingSlots,
            card: Bool = false, prefix: [UInt8] = [], separators: Bool = true
        ) -> AliasFormat {
            AliasFormat(
                name: name, kind: .preserving, inputAlphabet: input, outputAlphabet: output ?? input, keepFirst: first,
                keepLast: last, minSlots: min, maxSlots: max, isCard: card, forcedPrefix: prefix,
                keepsSeparators: separators)
        }
        switch name {
        case .UUID:
            return AliasFormat(
                name: name, kind: .token(keepLastFour: false), inputAlphabet: .alphanumeric62,
                outputAlphabet: .alphanumeric62, keepFirst: 0, keepLast: 0, minSlots: 0, maxSlots: Int.max,
                isCard: false, forcedPrefix: [], keepsSeparators: true)
        case .GENERIC_T_FOUR:
            return AliasFormat(
                name: name, kind: .token(keepLastFour: true), inputAlphabet: .alphanumeric62,
                outputAlphabet: .alphanumeric62, keepFirst: 0, keepLast: 4, minSlots: 4, maxSlots: Int.max,
                isCard: false, forcedPrefix: [], keepsSeparators: true)
        case .RAW_UUID:
            return AliasFormat(
                name: name, kind: .rawUUID, inputAlphabet: .alphanumeric62, outputAlphabet: .alphanumeric62,
                keepFirst: 0, keepLast: 0, minSlots: 0, maxSlots: Int.max, isCard: false, forcedPrefix: [],
                keepsSeparators: true)
        case .FPE_SIX_T_FOUR: return p(.digits, first: 6, last: 4, min: 12, max: 19, card: true)
        case .FPE_T_FOUR: return p(.digits, last: 4, min: 12, max: 19, card: true)
        case .PFPT: return p(.digits, last: 4, min: 12, max: 19, card: true, prefix: [9, 9])
        case .FPE_ACC_NUM_T_FOUR: return p(.digits, last: 4, min: 6)
        case .FPE_SSN_T_FOUR: return p(.digits, last: 4, min: 9, max: 9)
        case .NUM_LENGTH_PRESERVING: return p(.digits, min: 1)
        case .FPE_ALPHANUMERIC_ACC_NUM_T_FOUR: return p(.alphanumeric62, last: 4, min: 6)
        case .ALPHANUMERIC_LENGTH_PRESERVING: return p(.alphanumeric62, min: 1)
        case .ALPHANUMERIC_LENGTH_PRESERVING_T_FOUR: return p(.alphanumeric62, last: 4, min: 6)
        case .ALPHANUMERIC_LENGTH_PRESERVING_SIX_T_FOUR: return p(.alphanumeric62, first: 6, last: 4, min: 12)
        case .ALPHANUMERIC_SIX_T_FOUR: return p(.alphanumeric62, first: 6, last: 4, min: 12, separators: false)
        case .ALPHANUMERIC_SSN_T_FOUR: return p(.digits, .upperAlphanumeric36, last: 4, min: 9, max: 9)
        }
    }
}
