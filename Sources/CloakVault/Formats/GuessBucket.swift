import CloakCore
import CloakCrypto

/// The format-preserving bucket a value falls in, for callers that get deterministic aliases: all
/// values with the same kept characters (a card's BIN and last four), slot count and Luhn
/// outcome. Whoever holds an alias knows its bucket, and a caller that gets deterministic
/// aliases could find the value by aliasing every candidate of the bucket and comparing. Only
/// buckets small enough to search that way are tagged (``guessableSpace``); the service counts
/// how many distinct values of one bucket each token aliases (`limits.bucket_values_per_hour`).
///
/// Tags are HMACs under the vault's fingerprint key (truncated to 16 bytes): the counters hold
/// neither values nor their kept characters.
public struct GuessBucket: Sendable, Hashable {
    public let format: AliasFormatName
    /// Identifies the bucket (format, kept characters, slot count, Luhn outcome).
    public let bucket: [UInt8]
    /// Identifies the value within it.
    public let value: [UInt8]
    /// How many values share the bucket.
    public let space: Int

    /// Buckets of at most this many values are counted. A larger one cannot be searched in a day
    /// at the default token rate, which is charged per value (6,000 a minute: 8.6 million a day,
    /// so half of 10^8 takes about 6 days).
    public static let guessableSpace = 100_000_000
}

extension Vault {
    /// The bucket of each request's value, nil when its format preserves nothing or its bucket
    /// is too large to search (see ``GuessBucket``).
    public func guessBuckets(_ requests: [AliasRequest]) -> [GuessBucket?] {
        requests.map { request in
            guard let (kept, slots, space) = AliasGenerator.bucket(request.value, request.format, luhnValid: request.luhnValid),
                space <= GuessBucket.guessableSpace
            else { return nil }
            var bucketText = "cloak/v1/bucket\0\(request.format.rawValue)\0\(slots)\0\(request.luhnValid)\0"
            bucketText += String(decoding: kept, as: UTF8.self)
            var valueText = "cloak/v1/guess\0" + request.value
            let bucket = bucketText.withUTF8 { keys.fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
            let value = valueText.withUTF8 { keys.fingerprintMAC.authenticate(UnsafeRawBufferPointer($0)) }
            return GuessBucket(format: request.format, bucket: Array(bucket.prefix(16)), value: Array(value.prefix(16)),
                               space: space)
        }
    }
}

extension AliasGenerator {
    /// A format-preserving value's kept characters, slot count and the number of values that
    /// share both (its input alphabet over the free slots; a tenth of that for a card, whose
    /// Luhn outcome is fixed). nil for formats that preserve nothing or values they refuse.
    static func bucket(_ value: String, _ name: AliasFormatName, luhnValid: Bool) -> (kept: [UInt8], slots: Int, space: Int)? {
        let format = AliasFormat.of(name)
        guard case .preserving = format.kind, let layout = try? Layout(value, format) else { return nil }
        let free = max(layout.slots.count - format.keepFirst - format.forcedPrefix.count - format.keepLast, 0)
        var space = 1
        for _ in 0..<free {
            space = space.multipliedReportingOverflow(by: format.inputAlphabet.radix).overflow ? Int.max
                : space * format.inputAlphabet.radix
            if space > GuessBucket.guessableSpace * 10 { break }
        }
        if format.isCard { space = max(space / 10, 1) }
        return (layout.keptText(format), layout.slots.count, space)
    }
}
