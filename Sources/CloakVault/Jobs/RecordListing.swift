import CloakCore
import Foundation

/// What an export's count reads of a record (issue 76, item 4): what a selection looks at and
/// the aliases that name it, never its value, fingerprint, key or bucket. Reading each record
/// whole (on SQLite a statement for it and one for its aliases) was 17-19 s of a million-row
/// export's 41-48 s; a page of listings is one statement on both stores.
package struct RecordListing: Sendable, Equatable {
    package var id: String
    package var storage: StorageKind
    package var classifiers: [String]
    /// Seconds since 1970.
    package var createdAt: Int64
    package var expiresAt: Int64?
    package var intent: Bool
    package var metadata: [String: String]
    /// In issue order, each with its MAC (only an authentic one names the record).
    package var aliases: [IssuedAlias]

    /// The records table's columns a listing reads, in the order ``init(row:)`` reads them.
    static let columns = "id, storage, classifiers, created_at, expires_at, intent, metadata"
    /// ``columns`` of the records table named `table` in a statement (`r.id, r.storage, …`).
    static func columns(of table: String) -> String {
        columns.split(separator: ", ").map { "\(table).\($0)" }.joined(separator: ", ")
    }

    /// The listing in a row of ``columns``, without its aliases.
    init(row: some RecordRow) throws(StoreError) {
        guard let id = row.text(at: 0), let storage = row.text(at: 1).flatMap(StorageKind.init(rawValue:)),
            let classifiers = row.text(at: 2), let createdAt = row.integer(at: 3)
        else { throw .unavailable("a record row is incomplete") }
        self.init(
            id: id, storage: storage, classifiers: commaList(classifiers),
            createdAt: createdAt, expiresAt: row.integer(at: 4), intent: (row.integer(at: 5) ?? 0) != 0,
            metadata: RevealedRecord.decodeMetadata(row.text(at: 6)), aliases: [])
    }

    package init(
        id: String, storage: StorageKind, classifiers: [String], createdAt: Int64, expiresAt: Int64?, intent: Bool,
        metadata: [String: String], aliases: [IssuedAlias]
    ) {
        self.id = id
        self.storage = storage
        self.classifiers = classifiers
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.intent = intent
        self.metadata = metadata
        self.aliases = aliases
    }
}

extension StoredRecord {
    /// The record as an export's count sees it.
    package var listing: RecordListing {
        RecordListing(
            id: id, storage: storage, classifiers: classifiers, createdAt: createdAt, expiresAt: expiresAt,
            intent: intent, metadata: metadata, aliases: aliases)
    }
}
