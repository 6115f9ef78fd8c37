import CloakCore
import CloakCrypto

/// Why a value cannot take a format. Names the format and the shape expected, never the value.
package struct AliasInputError: Error, Sendable, Equatable, CustomStringConvertible {
    package let description: String
    /// Not a bad input: every candidate of a small alias space has been tried.
    package var isSpaceExhausted = false
    /// Not a bad input: this attempt has no acceptable candidate; the next attempt (another FF1
    /// tweak) will.
    package var isRetryable = false
}

/// Makes alias candidates for a value in a format. Candidate `attempt` 0, 1, 2… differ (the
/// attempt is part of the FF1 tweak; random formats draw again), so the vault can retry when a
/// candidate is already issued. Public for benchmarks and tools; the vault is the only writer.
package struct AliasGenerator: Sendable {
    let environment: String
    let ff1Decimal: FF1
    let ff1Alphanumeric62: FF1
    let ff1Alphanumeric36: FF1

    package init(environment: String, ff1Key: SymmetricKey) throws(CryptoError) {
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
    package static let maxValueBytes = 32_768
    /// The longest value a format-preserving format takes, in bytes (its slots are capped at
    /// ``AliasFormat/maxPreservingSlots``; this bounds the separators around them).
    package static let maxPreservingValueBytes = 256

    /// Checks that `value` can take `format` (before anything is stored).
    static func validate(_ value: String, format: AliasFormatName) throws(AliasInputError) {
        let f = AliasFormat.of(format)
        let limit = f.kind.isPreserving ? maxPreservingValueBytes : maxValueBytes
        guard value.utf8.count <= limit else {
            throw AliasInputError(
                description: "\(format.rawValue) takes values of at most \(limit) bytes, not \(value.utf8.count)")
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
