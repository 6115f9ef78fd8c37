import CloakCore
import CloakCrypto
import Foundation

/// A result row as a store reads it, column by index. Both stores decode their rows through
/// ``StoredRecord/init(row:)`` and ``IssuedAlias/init(row:)``: the column order and how a record
/// is laid out in them (classifiers as a comma list, storage by name) are written down once.
protocol RecordRow {
    func text(at column: Int) -> String?
    func bytes(at column: Int) -> [UInt8]?
    func integer(at column: Int) -> Int64?
}

/// A row's columns from `by` on, as ``RecordRow``: a record (or alias) among other columns.
struct ShiftedRow<Row: RecordRow>: RecordRow {
    let row: Row
    let by: Int
    func text(at column: Int) -> String? { row.text(at: by + column) }
    func bytes(at column: Int) -> [UInt8]? { row.bytes(at: by + column) }
    func integer(at column: Int) -> Int64? { row.integer(at: by + column) }
}

/// The items of a comma list as stores keep them (classifiers, a group's members): split on its
/// bytes, not its Characters (Foundation's `components(separatedBy:)` and `String.split` were
/// a tenth of a rows export's count, issue 76). Empty: none.
func commaList(_ text: String) -> [String] {
    guard !text.isEmpty else { return [] }
    return text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
    }
}

extension StoredRecord {
    /// The records table's columns, in the order ``init(row:)`` reads them.
    static let columns =
        "id, fingerprint, key_id, nonce, ciphertext, tag, storage, classifiers, created_at, expires_at, intent, bucket, metadata"

    /// The record in a row of ``columns``, without its aliases.
    init(row: some RecordRow) throws(StoreError) {
        guard let id = row.text(at: 0), let keyID = row.text(at: 2), let nonce = row.bytes(at: 3),
            let ciphertext = row.bytes(at: 4), let tag = row.bytes(at: 5),
            let storage = row.text(at: 6).flatMap(StorageKind.init(rawValue:)), let classifiers = row.text(at: 7),
            let createdAt = row.integer(at: 8)
        else { throw .unavailable("a record row is incomplete") }
        self.init(
            id: id, fingerprint: row.bytes(at: 1), keyID: keyID,
            sealed: AESGCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag), storage: storage,
            classifiers: commaList(classifiers), createdAt: createdAt,
            expiresAt: row.integer(at: 9), aliases: [], intent: (row.integer(at: 10) ?? 0) != 0,
            bucket: row.bytes(at: 11),
            metadata: RevealedRecord.decodeMetadata(row.text(at: 12)))
    }
}

extension IssuedAlias {
    /// The alias in a row of `alias, format, mac`; nil when the format is not one this version
    /// knows (the row is skipped, not fatal).
    init?(row: some RecordRow) {
        guard let alias = row.text(at: 0), let format = row.text(at: 1).flatMap(IssuedAlias.parseStoredFormat) else {
            return nil
        }
        self.init(alias: alias, format: format.format, luhnValid: format.luhnValid, mac: row.bytes(at: 2) ?? [])
    }
}

extension StoredAuditBlock {
    /// The audit blocks table's columns, in the order ``init(row:)`` reads them (both stores).
    static let columns = "id, last_at, chain, first_seq, body, prev, mac, last_seq"

    /// The block in a row of ``columns``.
    init(row: some RecordRow) throws(StoreError) {
        guard let id = row.integer(at: 0), let lastAt = row.integer(at: 1), let chain = row.text(at: 2),
            let first = row.integer(at: 3), let body = row.bytes(at: 4), let lastSeq = row.integer(at: 7)
        else { throw .unavailable("an audit block row is incomplete") }
        self.init(
            id: id, lastAt: lastAt, lastSeq: lastSeq,
            block: AuditBlock(
                chain: chain, first: first, body: body, previousMAC: row.bytes(at: 5) ?? [], mac: row.bytes(at: 6) ?? []
            ))
    }
}

extension StoredGroup {
    /// A group in a row of `id, key_id, nonce, ciphertext, tag, created_at, members` (members a
    /// comma list, or null for none): both stores' group reads.
    init(row: some RecordRow) throws(StoreError) {
        guard let id = row.text(at: 0), let keyID = row.text(at: 1), let nonce = row.bytes(at: 2),
            let ciphertext = row.bytes(at: 3), let tag = row.bytes(at: 4), let createdAt = row.integer(at: 5)
        else { throw .unavailable("a group row is incomplete") }
        let members = row.text(at: 6).map(commaList) ?? []
        self.init(
            id: id, keyID: keyID, sealed: AESGCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag),
            createdAt: createdAt, members: members)
    }
}
