import CloakCrypto

/// Record ids: `rec_` and 22 base58 characters of 16 bytes, the first four the second the record
/// was made (big-endian) and twelve random.
///
/// Base58 of a fixed width keeps byte order, so ids made later sort later: the stores' indexes
/// on record ids (the records' key, the aliases' `(record, format)`) grow at their end, where
/// a batch's inserts share pages, instead of dirtying one random page per insert (perf: WAL
/// writes were most of a new alias's vault time). Ids stay text rather than integers because
/// an id is bound into its record's AES-GCM associated data and into every alias MAC: records
/// written before keep theirs, and both stores take the change without a migration. 96 random
/// bits keep ids unguessable and unique within a second.
enum RecordID {
    static func make(now: Int64) -> String {
        let second = UInt32(clamping: max(0, now))
        var bytes: [UInt8] = [UInt8(second >> 24), UInt8(second >> 16 & 0xFF), UInt8(second >> 8 & 0xFF), UInt8(second & 0xFF)]
        bytes += SecureRandom.bytes(12)
        return "rec_" + Base58.encode(bytes, width: 22)
    }
}
