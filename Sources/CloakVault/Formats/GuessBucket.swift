import CloakCore
import CloakCrypto

/// The bucket a value falls in, for callers that get deterministic aliases: all values an alias
/// holder could tell apart from the rest by looking at the alias and guessing the value's shape.
/// Whoever holds a deterministic alias could find its value by aliasing every candidate of the
/// bucket and comparing (deduplication answers a stored value's own alias, in every format).
///
/// - Format-preserving formats: the kept characters (a card's BIN and last four), slot count and
///   Luhn outcome; 10^5 values for a 16-digit card under `FPE_SIX_T_FOUR`.
/// - Token formats (`UUID`, `RAW_UUID`, `GENERIC_T_FOUR`): the value's shape (each digit, letter
///   and other character by class) and, for `GENERIC_T_FOUR`, its last four letters or digits,
///   which the alias shows; 10^5 values for an SSN under `GENERIC_T_FOUR`, 10^3 for a CVC.
///
/// Only buckets small enough to search are tagged (``guessableSpace``); the service counts how
/// many distinct values of one bucket each token aliases (`limits.bucket_values_per_hour`).
/// Tags are HMACs under the vault's fingerprint key (16 bytes): the counters hold neither values
/// nor their kept characters.
package struct GuessBucket: Sendable, Hashable {
    package let format: AliasFormatName
    /// Identifies the bucket.
    package let bucket: GuessTag
    /// Identifies the value within it.
    package let value: GuessTag
    /// How many values share the bucket.
    package let space: Int

    /// Buckets of at most this many values are counted. A larger one cannot be searched in a day
    /// at the default token rate, which is charged per value (6,000 a minute: 8.6 million a day,
    /// so half of 10^8 takes about 6 days).
    package static let guessableSpace = 100_000_000
}

/// 128 bits of an HMAC: compared and hashed without a heap array.
package struct GuessTag: Sendable, Hashable {
    package let high: UInt64
    package let low: UInt64

    init(_ mac: [UInt8]) {
        var h: UInt64 = 0, l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(mac[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(mac[i]) }
        high = h
        low = l
    }
}

extension Vault {
    /// Every bucket the requests' values are counted in (see ``GuessBucket``): a value's own, and
    /// for a value in a token format (or a card format that hides the BIN) that is all digits
    /// (separators aside) the buckets an alias
    /// holder could know it by from elsewhere: a card's BIN, last four and length (a receipt, an
    /// FPE alias of the same card), or an SSN's or account number's last four and length. Only
    /// buckets of at most ``GuessBucket/guessableSpace`` values are returned.
    package func guessBuckets(_ requests: [AliasRequest]) -> [GuessBucket] {
        var out: [GuessBucket] = []
        for request in requests {
            let kind = AliasFormat.of(request.format).kind
            // A VOLATILE value in a token format is never deduplicated: each alias is new, and
            // no answer can match an alias the caller holds.
            if !kind.isPreserving && request.storage == .volatile { continue }
            if let (shape, space) = AliasGenerator.bucket(request.value, request.format, luhnValid: request.luhnValid),
                space <= GuessBucket.guessableSpace
            {
                out.append(
                    tag(request, label: "\(request.format.rawValue)\0\(request.luhnValid)", shape: shape, space: space))
            }
            // A card alias that hides the BIN (FPE_T_FOUR, PFPT) is counted in the BIN + last-four
            // bucket too, as a token format's card is: the BIN is no secret (a receipt, the
            // card's attributes), and without it guesses of one BIN's 10^5 cards would go
            // uncounted in a bucket of 10^11 (issue 57: the shipped checkout's format).
            let format = AliasFormat.of(request.format)
            guard !kind.isPreserving || (format.isCard && format.keepFirst < 6) else { continue }
            let digits = request.value.utf8.filter { $0 >= 0x30 && $0 <= 0x39 }
            // Digits and the separators people and formats put between them (`+1 (555) 123-4567`).
            let separatorsOnly = request.value.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x20 || $0 == 0x2D || $0 == 0x2E || $0 == 0x2F || $0 == 0x2B
                    || $0 == 0x28 || $0 == 0x29
            }
            guard separatorsOnly, digits.count >= 9 else { continue }
            let n = digits.count
            let lastFour = Array(digits.suffix(4))
            if n >= 13, n <= 19 {
                // A card: BIN and last four are printed on receipts; 10^(n-10) / 10 Luhn-valid values
                // share them. A number that fails Luhn is counted in the same bucket (an FPE alias made
                // with luhnValid false, guessed): the bucket is what a receipt shows, not the checksum.
                let luhn = Luhn.isValid(numerals: digits.map { $0 - 0x30 })
                let space = AliasGenerator.power(10, n - 10) / (luhn ? 10 : 1)
                if space <= GuessBucket.guessableSpace {
                    out.append(
                        tag(
                            request, label: "card",
                            shape: Array(digits.prefix(6)) + [0x2E] + lastFour + Array("/\(n)".utf8),
                            space: max(space, 1)))
                }
            }
            let space = AliasGenerator.power(10, n - 4)
            if space <= GuessBucket.guessableSpace {
                out.append(tag(request, label: "last-four", shape: lastFour + Array("/\(n)".utf8), space: space))
            }
        }
        return out
    }

    private func tag(_ request: AliasRequest, label: String, shape: [UInt8], space: Int) -> GuessBucket {
        var bucketText = "cloak/v1/bucket\0\(label)\0" + String(decoding: shape, as: UTF8.self)
        // The value as a guesser would type it: digits alone for the cross-format buckets.
        var valueText = "cloak/v1/guess\0" + request.value
        let bucket = bucketText.withUTF8 { fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
        let value = valueText.withUTF8 { fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
        return GuessBucket(format: request.format, bucket: GuessTag(bucket), value: GuessTag(value), space: space)
    }
}

extension AliasGenerator {
    /// What an alias holder knows of a value (its bucket's identity) and how many values share
    /// it; nil for a value its format refuses.
    static func bucket(_ value: String, _ name: AliasFormatName, luhnValid: Bool) -> (shape: [UInt8], space: Int)? {
        let format = AliasFormat.of(name)
        switch format.kind {
        case .preserving:
            guard let layout = try? Layout(value, format) else { return nil }
            let free = max(layout.slots.count - format.keepFirst - format.forcedPrefix.count - format.keepLast, 0)
            var space = power(format.inputAlphabet.radix, free)
            if format.isCard { space = max(space / 10, 1) }
            return (Array("\(layout.slots.count).".utf8) + layout.keptText(format), space)
        case .token, .rawUUID:
            // The value's shape: digits as 9, letters as a, anything else as itself (a guesser
            // must get the separators right too; they add nothing to the space).
            var shape: [UInt8] = []
            shape.reserveCapacity(value.utf8.count)
            var digits = 0, alphanumerics = 0
            for b in value.utf8 {
                if b >= 0x30 && b <= 0x39 {
                    shape.append(0x39); digits += 1; alphanumerics += 1
                } else if Layout.isAlphanumeric(b) {
                    shape.append(0x61); alphanumerics += 1
                } else {
                    shape.append(b)
                }
            }
            var kept: [UInt8] = []
            if case .token(keepLastFour: true) = format.kind {
                guard let last = try? lastFour(value, name) else { return nil }
                kept = Array(last.utf8)
            }
            let free = alphanumerics - kept.count
            // Digits only: ten a position; any letter: 62 a position (case matters to a fingerprint).
            let space = digits == alphanumerics ? power(10, free) : power(62, free)
            return (shape + [0x2E] + kept, space)
        }
    }

    /// `base` to the `exponent`, stopping once past ten times ``GuessBucket/guessableSpace``.
    static func power(_ base: Int, _ exponent: Int) -> Int {
        var out = 1
        for _ in 0..<max(exponent, 0) {
            out *= base
            if out > GuessBucket.guessableSpace * 10 { break }
        }
        return out
    }
}
