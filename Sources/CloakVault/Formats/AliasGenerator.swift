import CloakCore
import CloakCrypto

/// Why a value cannot take a format. Names the format and the shape expected, never the value.
public struct AliasInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// Not a bad input: every candidate of a small alias space has been tried.
    public var isSpaceExhausted = false
    /// Not a bad input: this attempt has no acceptable candidate; the next attempt (another FF1
    /// tweak) will.
    public var isRetryable = false
}

/// Makes alias candidates for a value in a format. Candidate `attempt` 0, 1, 2… differ (the
/// attempt is part of the FF1 tweak; random formats draw again), so the vault can retry when a
/// candidate is already issued. Public for benchmarks and tools; the vault is the only writer.
public struct AliasGenerator: Sendable {
    let environment: String
    let ff1Decimal: FF1
    let ff1Alphanumeric62: FF1
    let ff1Alphanumeric36: FF1

    public init(environment: String, ff1Key: SymmetricKey) throws(CryptoError) {
        self.environment = environment
        ff1Decimal = try FF1(key: ff1Key, radix: 10)
        ff1Alphanumeric62 = try FF1(key: ff1Key, radix: 62)
        ff1Alphanumeric36 = try FF1(key: ff1Key, radix: 36)
    }

    /// The longest cycle walk of one attempt.
    static let maxWalks = 1_000

    /// NIST SP 800-38G Rev. 1: FF1 needs a domain of at least a million.
    static let minimumDomain = 1_000_000

    /// The number of possible aliases when the free characters are drawn at random (a domain too
    /// small for FF1); nil when FF1 is used or the format is a token.
    static func randomSpace(_ value: String, _ name: AliasFormatName) -> Int? {
        let format = AliasFormat.of(name)
        guard case .preserving = format.kind, let layout = try? Layout(value, format) else { return nil }
        let free = layout.slots.count - format.keepFirst - format.forcedPrefix.count - format.keepLast
        var domain = 1
        for _ in 0..<max(free, 0) where domain < minimumDomain { domain *= format.outputAlphabet.radix }
        return free >= 2 && domain >= minimumDomain ? nil : domain
    }

    /// The longest value any format takes, in UTF-8 bytes.
    public static let maxValueBytes = 32_768
    /// The longest value a format-preserving format takes, in bytes (its slots are capped at
    /// ``AliasFormat/maxPreservingSlots``; this bounds the separators around them).
    public static let maxPreservingValueBytes = 256

    /// Checks that `value` can take `format` (before anything is stored).
    static func validate(_ value: String, format: AliasFormatName) throws(AliasInputError) {
        let f = AliasFormat.of(format)
        let limit = f.kind.isPreserving ? maxPreservingValueBytes : maxValueBytes
        guard value.utf8.count <= limit else {
            throw AliasInputError(description: "\(format.rawValue) takes values of at most \(limit) bytes, not \(value.utf8.count)")
        }
        switch f.kind {
        case .rawUUID, .token(keepLastFour: false): return  // any text
        case .token(keepLastFour: true): _ = try lastFour(value, format)
        case .preserving: _ = try Layout(value, f)
        }
    }

    /// The last four ASCII letters or digits of any text (GENERIC_T_FOUR).
    static func lastFour(_ value: String, _ name: AliasFormatName) throws(AliasInputError) -> String {
        let kept = value.utf8.filter { Layout.isAlphanumeric($0) }
        guard kept.count >= 4 else {
            throw AliasInputError(description: "\(name.rawValue) needs at least 4 letters or digits, not \(kept.count)")
        }
        return String(decoding: kept.suffix(4), as: UTF8.self)
    }

    /// - Parameter random: false for the deterministic alias (FF1 of the free characters);
    ///   true for an anonymous caller's alias, whose free characters are drawn at random, so the
    ///   alias says nothing about which value it stands for.
    public func alias(for value: String, format name: AliasFormatName, luhnValid: Bool, attempt: Int,
                      random: Bool = false) throws(AliasInputError) -> String {
        let format = AliasFormat.of(name)
        switch format.kind {
        case .rawUUID:
            return Self.randomUUID()
        case let .token(keepLastFour):
            let prefix = "tok_\(environment)_"
            guard keepLastFour else { return prefix + Base58.encode(SecureRandom.bytes(16), width: 22) }
            return prefix + Base58.encode(SecureRandom.bytes(13), width: 18) + (try Self.lastFour(value, name))
        case .preserving:
            let layout = try Layout(value, format)
            return try preserving(layout, format, luhnValid: luhnValid, attempt: attempt, random: random)
        }
    }

    private func preserving(_ layout: Layout, _ format: AliasFormat, luhnValid: Bool, attempt: Int,
                            random: Bool) throws(AliasInputError) -> String {
        let n = layout.slots.count
        let freeStart = format.keepFirst + format.forcedPrefix.count
        let freeEnd = n - format.keepLast
        let radix = format.outputAlphabet.radix
        var domain = 1
        for _ in freeStart..<max(freeEnd, freeStart) where domain < Self.minimumDomain { domain *= radix }
        let ff1Sized = freeEnd - freeStart >= 2 && domain >= Self.minimumDomain
        // Random draws: an anonymous caller's alias (uniform among the acceptable ones, in a space
        // as large as FF1's, and about ten cheap draws for a Luhn-valid card instead of ten FF1
        // encryptions), and the first attempts in a space too small for FF1.
        if freeEnd > freeStart && (ff1Sized ? random : attempt < Vault.maxAttempts) {
            return layout.render(try Self.draw(layout, format, luhnValid: luhnValid), format)
        }
        let free = Array(layout.numerals[freeStart..<freeEnd])
        let head = Array(layout.numerals[0..<format.keepFirst]) + format.forcedPrefix
        let tail = Array(layout.numerals[freeEnd..<n])

        func assemble(_ middle: [UInt8]) -> [UInt8] { head + middle + tail }
        func acceptable(_ numerals: [UInt8]) -> Bool {
            guard format.isCard else { return true }
            return Luhn.isValid(numerals: numerals) == luhnValid
        }

        var middle: [UInt8]
        if ff1Sized {
            let ff1 = format.outputAlphabet == .digits ? ff1Decimal
                : format.outputAlphabet == .alphanumeric62 ? ff1Alphanumeric62 : ff1Alphanumeric36
            // The kept characters and the format are the tweak, with the attempt number for retries.
            var tweak = Array(format.name.rawValue.utf8) + [0] + layout.keptText(format) + [0]
            tweak += withUnsafeBytes(of: UInt32(attempt).bigEndian, Array.init)
            do {
                middle = try ff1.encrypt(free, tweak: tweak)
                // Cycle-walking keeps FF1 a bijection while forcing the Luhn outcome. When the
                // walk comes back to where it started (a cycle with no acceptable alias but the
                // value itself, about one card in 100,000) or runs long, the next attempt's
                // tweak gives another permutation.
                let start = middle
                var walks = 0
                while !acceptable(assemble(middle)) || assemble(middle) == layout.numerals {
                    middle = try ff1.encrypt(middle, tweak: tweak)
                    walks += 1
                    if middle == start || walks > Self.maxWalks {
                        throw AliasInputError(description: "no \(format.name.rawValue) alias on this attempt's cycle", isRetryable: true)
                    }
                }
            } catch let e as AliasInputError {
                throw e
            } catch {
                throw AliasInputError(description: "\(format.name.rawValue): \(error)")
            }
        } else {
            // Too few free characters for FF1, past the random attempts: walk the space in order
            // from candidate (attempt − maxAttempts) so every one is tried.
            var ordinal = max(0, attempt - Vault.maxAttempts)
            var steps = 0
            repeat {
                steps += 1
                if steps > 10_000 { throw AliasInputError(description: "no \(format.name.rawValue) alias satisfies the Luhn setting") }
                var k = ordinal
                middle = [UInt8](repeating: 0, count: free.count)
                for i in stride(from: free.count - 1, through: 0, by: -1) {
                    middle[i] = UInt8(k % radix)
                    k /= radix
                }
                ordinal += 1
                if k > 0 {  // past the end of the space
                    throw AliasInputError(description: "every \(format.name.rawValue) alias of this shape is taken",
                                          isSpaceExhausted: true)
                }
            } while !acceptable(assemble(middle)) || (free.count > 0 && assemble(middle) == layout.numerals)
        }
        return layout.render(assemble(middle), format)
    }

    /// Free characters drawn at random until the alias is acceptable (its Luhn outcome) and is
    /// not the value itself. The numerals are drawn in place from one buffer of random bytes, each
    /// byte taken only below the largest multiple of the radix (no modulo bias).
    static func draw(_ layout: Layout, _ format: AliasFormat, luhnValid: Bool) throws(AliasInputError) -> [UInt8] {
        let n = layout.slots.count
        let freeStart = format.keepFirst + format.forcedPrefix.count
        let freeEnd = n - format.keepLast
        let radix = format.outputAlphabet.radix
        var candidate = layout.numerals
        candidate.replaceSubrange(format.keepFirst..<freeStart, with: format.forcedPrefix)
        var random = [UInt8](repeating: 0, count: 64)
        var used = random.count
        let limit = 256 - 256 % radix
        func numeral() -> UInt8 {
            while true {
                if used == random.count {
                    random.withUnsafeMutableBytes { SecureRandom.fill($0) }
                    used = 0
                }
                let byte = Int(random[used])
                used += 1
                if byte < limit { return UInt8(byte % radix) }
            }
        }
        for _ in 0..<10_000 {
            for i in freeStart..<freeEnd { candidate[i] = numeral() }
            if format.isCard && Luhn.isValid(numerals: candidate) != luhnValid { continue }
            if candidate != layout.numerals { return candidate }
        }
        throw AliasInputError(description: "no \(format.name.rawValue) alias satisfies the Luhn setting")
    }

    /// A random (version 4) UUID in lowercase, `8-4-4-4-12`.
    static func randomUUID() -> String {
        var b = SecureRandom.bytes(16)
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        let hex: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for (i, byte) in b.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                out[o] = hex.utf8Start[Int(byte >> 4)]
                out[o + 1] = hex.utf8Start[Int(byte & 0x0F)]
                o += 2
            }
            return o
        }
    }
}

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
            let range = format.minSlots == format.maxSlots ? "exactly \(format.minSlots)"
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

/// Bitcoin-style base58 (no 0, O, I, l).
enum Base58 {
    static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)

    /// Encodes `bytes` as exactly `width` characters (left-padded with "1", the zero digit):
    /// the `width` least significant base-58 digits of the big-endian number.
    ///
    /// The number is divided in 32-bit limbs by 58^5, five digits per pass (the byte-by-byte
    /// long division it replaces spent about a microsecond on a 16-byte token).
    static func encode(_ bytes: [UInt8], width: Int) -> String {
        var limbs: [UInt32] = []  // most significant first
        limbs.reserveCapacity(bytes.count / 4 + 1)
        var acc: UInt32 = 0
        for (i, b) in bytes.enumerated() {
            acc = acc << 8 | UInt32(b)
            if (bytes.count - 1 - i) % 4 == 0 {
                limbs.append(acc)
                acc = 0
            }
        }
        let fiveDigits: UInt64 = 656_356_768  // 58^5
        var digits: [UInt8] = []  // least significant first
        digits.reserveCapacity(max(width, bytes.count * 2))
        var start = 0
        while start < limbs.count {
            var remainder: UInt64 = 0
            for i in start..<limbs.count {
                let value = remainder << 32 | UInt64(limbs[i])
                limbs[i] = UInt32(value / fiveDigits)
                remainder = value % fiveDigits
            }
            while start < limbs.count && limbs[start] == 0 { start += 1 }
            for _ in 0..<5 {
                digits.append(alphabet[Int(remainder % 58)])
                remainder /= 58
            }
        }
        while digits.count < width { digits.append(alphabet[0]) }
        return String(decoding: digits.prefix(width).reversed(), as: UTF8.self)
    }
}
