import CloakCore
import CloakCrypto

extension AliasGenerator {
    /// - Parameter random: false for the deterministic alias (FF1 of the free characters);
    ///   true for an anonymous caller's alias, whose free characters are drawn at random, so the
    ///   alias says nothing about which value it stands for.
    package func alias(
        for value: String, format name: AliasFormatName, luhnValid: Bool, attempt: Int,
        random: Bool = false
    ) throws(AliasInputError) -> String {
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

    private func preserving(
        _ layout: Layout, _ format: AliasFormat, luhnValid: Bool, attempt: Int,
        random: Bool
    ) throws(AliasInputError) -> String {
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
            let ff1 =
                format.outputAlphabet == .digits
                ? ff1Decimal
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
                        throw AliasInputError(
                            description: "no \(format.name.rawValue) alias on this attempt's cycle", isRetryable: true)
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
                if steps > 10_000 {
                    throw AliasInputError(description: "no \(format.name.rawValue) alias satisfies the Luhn setting")
                }
                var k = ordinal
                middle = [UInt8](repeating: 0, count: free.count)
                for i in stride(from: free.count - 1, through: 0, by: -1) {
                    middle[i] = UInt8(k % radix)
                    k /= radix
                }
                ordinal += 1
                if k > 0 {  // past the end of the space
                    throw AliasInputError(
                        description: "every \(format.name.rawValue) alias of this shape is taken",
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
}
