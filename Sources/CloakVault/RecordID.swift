import CloakCrypto
import Synchronization

/// Record ids: `rec_` and 22 base58 characters of 16 bytes: the second the record was made
/// (4 bytes, big-endian), this process's sequence number (3 bytes, big-endian, from a random
/// start) and 9 random bytes.
///
/// Base58 of a fixed width keeps byte order, so ids made later sort later: the stores' indexes
/// on record ids (the records' key, the aliases' `(record, format)`) grow at their end, where
/// a batch's inserts share pages, instead of dirtying one random page per insert. The sequence
/// keeps that true within a second: with a second alone, a second's ids (thousands under load)
/// were random among themselves and landed on as many pages (perf: WAL writes and `fdatasync`
/// were most of a new alias's vault time). Ids stay text rather than integers because an id is
/// bound into its record's AES-GCM associated data and into every alias MAC: records written
/// before keep theirs, and both stores take the change without a migration. The 72 random bits
/// keep ids unique across processes and restarts within a second, and unguessable.
enum RecordID {
    /// Wraps after 2^24 ids: the ids of that one second then sort in two runs, which costs
    /// locality, never uniqueness.
    private static let sequence = Atomic<UInt32>(UInt32.random(in: 0..<(1 << 24)))

    static func make(now: Int64) -> String {
        let second = UInt32(clamping: max(0, now))
        let n = sequence.wrappingAdd(1, ordering: .relaxed).oldValue
        var bytes: [UInt8] = [
            UInt8(second >> 24), UInt8(second >> 16 & 0xFF), UInt8(second >> 8 & 0xFF), UInt8(second & 0xFF),
            UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF),
        ]
        bytes += SecureRandom.bytes(9)
        return "rec_" + Base58.encode(bytes, width: 22)
    }
}
