import CloakCore
import CloakCrypto

/// A value split into slots (characters the format transforms or keeps) and separators.
struct Layout {
    /// The value's bytes (ASCII).
    let bytes: [UInt8]
    /// Indices of slot characters in `bytes`.
    let slots: [Int]
    /// Each slot as a numeral of the format's output alphabet.
    let numerals: [UInt8]

    init(_ value: String, _ format: AliasFormat) throws(AliasInputError) {
        let name = format.name.rawValue
        guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw AliasInputError(description: "\(name) takes printable ASCII characters only")
        }
        bytes = Array(value.utf8)
        var slots: [Int] = []
        var numerals: [UInt8] = []
        slots.reserveCapacity(bytes.count)  // one allocation each, not one per doubling
        numerals.reserveCapacity(bytes.count)
        for (i, b) in bytes.enumerated() {
            if let numeral = Self.numeral(b, format.inputAlphabet) {
                slots.append(i)
                numerals.append(numeral)
            } else if format.inputAlphabet == .digits && Self.isAlphanumeric(b) {
                throw AliasInputError(description: "\(name) takes digits (with spaces, dashes, dots or slashes) only")
            } else if format.inputAlphabet == .digits && !(b == 0x20 || b == 0x2D || b == 0x2E || b == 0x2F) {
                throw AliasInputError(description: "\(name) takes digits (with spaces, dashes, dots or slashes) only")
            }
        }
        guard slots.count >= format.minSlots, slots.count <= format.maxSlots else {
            let kind = format.inputAlphabet == .digits ? "digits" : "letters and digits"
            let range =
                format.minSlots == format.maxSlots
                ? "exactly \(format.minSlots)"
                : format.maxSlots > 1_000 ? "at least \(format.minSlots)" : "\(format.minSlots) to \(format.maxSlots)"
            throw AliasInputError(description: "\(name) needs \(range) \(kind), not \(slots.count)")
        }
        self.slots = slots
        self.numerals = numerals
    }

    var slotText: [UInt8] { slots.map { bytes[$0] } }

    /// The kept leading and trailing slot characters (part of the FF1 tweak).
    func keptText(_ format: AliasFormat) -> [UInt8] {
        let text = slotText
        return Array(text.prefix(format.keepFirst)) + [0x2E] + Array(text.suffix(format.keepLast))
    }

    /// The alias text: new numerals in the slots, separators kept or dropped.
    func render(_ newNumerals: [UInt8], _ format: AliasFormat) -> String {
        let symbols = Self.symbols(format.outputAlphabet)
        if !format.keepsSeparators {
            return String(decoding: newNumerals.map { symbols[Int($0)] }, as: UTF8.self)
        }
        var out = bytes
        for (k, index) in slots.enumerated() { out[index] = symbols[Int(newNumerals[k])] }
        return String(decoding: out, as: UTF8.self)
    }

    static func isAlphanumeric(_ b: UInt8) -> Bool {
        (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b)
    }

    static func numeral(_ b: UInt8, _ alphabet: AliasFormat.Alphabet) -> UInt8? {
        switch alphabet {
        case .digits, .upperAlphanumeric36: return (48...57).contains(b) ? b - 48 : nil
        case .alphanumeric62:
            if (48...57).contains(b) { return b - 48 }
            if (97...122).contains(b) { return b - 97 + 10 }
            if (65...90).contains(b) { return b - 65 + 36 }
            return nil
        }
    }

    static func symbols(_ alphabet: AliasFormat.Alphabet) -> [UInt8] {
        switch alphabet {
        case .digits: return Array("0123456789".utf8)
        case .alphanumeric62: return Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        case .upperAlphanumeric36: return Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        }
    }
}
