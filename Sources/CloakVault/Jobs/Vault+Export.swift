import CloakCore

/// Which records an export takes (issue 60), applied to each record read: a PERSISTENT value a
/// token holder stored (never a VOLATILE one such as a CVC, an anonymous caller's intent, an
/// uploaded file's key, or an expired record), stored no later than the selection was counted
/// (an approval covers the rows counted, not rows stored since), and matched by the selection.
package struct ExportFilter: Sendable, Equatable {
    package enum Match: Sendable, Equatable {
        case everything
        /// Every pair is in the record's metadata.
        case metadata([String: String])
        case classifier(String)
        /// Aliases listed with the job (read from its input): each one that points to a record
        /// the filter takes.
        case listed
    }

    package var match: Match
    /// When the selection was counted (Unix seconds).
    package var asOf: Int64

    package init(match: Match, asOf: Int64) {
        self.match = match
        self.asOf = asOf
    }

    package func selects(_ record: RecordListing, now: Int64) -> Bool {
        guard mayTake(record, now: now) else { return false }
        switch match {
        case .everything, .listed: return true
        case let .metadata(pairs): return pairs.allSatisfy { record.metadata[$0.key] == $0.value }
        case let .classifier(name): return record.classifiers.contains(name)
        }
    }

    /// Whether an export may take the record at all, whatever the match: what a rows export
    /// asks of each part of a group it selected (issue 76).
    package func mayTake(_ record: RecordListing, now: Int64) -> Bool {
        guard record.storage == .persistent, !record.intent, record.createdAt <= asOf,
            !record.classifiers.contains(Vault.fileClassifier)
        else { return false }
        if let expires = record.expiresAt, expires <= now { return false }
        return true
    }
}

/// One record of an export: its id, the alias it is known by (the listed one, else the
/// record's first), that alias's format, and the value (empty while the selection is only
/// counted).
package struct ExportRow: Sendable, Equatable {
    /// The record's id (`rec_…`): a row's id in the file, since an alias that keeps a card's
    /// shape would be refused as an id by an import (it looks like a card number).
    package var record: String
    package var alias: String
    package var format: AliasFormatName
    package var value: String
    package var createdAt: Int64

    package init(record: String, alias: String, format: AliasFormatName, value: String, createdAt: Int64) {
        self.record = record
        self.alias = alias
        self.format = format
        self.value = value
        self.createdAt = createdAt
    }
}

/// A page of an export's records: those selected, how many listed aliases found nothing, and
/// where the next page starts (nil: this was the last).
package struct ExportPage: Sendable {
    package var rows: [ExportRow] = []
    package var missing = 0
    package var next: String?

    package init(rows: [ExportRow] = [], missing: Int = 0, next: String? = nil) {
        (self.rows, self.missing, self.next) = (rows, missing, next)
    }
}

extension Vault {
    /// Up to `limit` of the store's records after record `after` (in id order), those `filter`
    /// selects, their values opened when `open`. A count opens none and reads only listings
    /// (``RecordListing``); both pass the same records through the same filter, so the write
    /// folds the rows the count folded. On the executor.
    package func exportPage(
        after: String?, limit: Int, filter: ExportFilter, open: Bool, in store: any AliasStore
    ) throws -> ExportPage {
        let records = open ? try store.records(after: after, limit: limit) : nil
        let listings = try records.map { $0.map(\.listing) } ?? store.recordListings(after: after, limit: limit)
        var page = ExportPage(next: listings.count == limit ? listings.last?.id : nil)
        let now = clock()
        for (index, listing) in listings.enumerated() where filter.selects(listing, now: now) {
            // Only an alias whose MAC binds it to the record names it (a row a database writer
            // pointed here does not).
            guard let alias = listing.aliases.first(where: { isAuthentic($0, recordID: listing.id) }) else { continue }
            page.rows.append(
                ExportRow(
                    record: listing.id, alias: alias.alias, format: alias.format,
                    value: try records.map { try self.open($0[index], in: store).value } ?? "",
                    createdAt: listing.createdAt))
        }
        return page
    }

    /// The records `aliases` point to, those `filter` selects, in the list's order, opened when
    /// `open`; an alias that finds nothing selectable counts as missing. On the executor.
    package func exportListed(
        _ aliases: [String], filter: ExportFilter, open: Bool, in store: any AliasStore
    ) throws -> ExportPage {
        let found = try store.records(aliases: aliases)
        var page = ExportPage()
        let now = clock()
        for alias in aliases {
            guard let record = (try? live(found[alias], alias: alias)) ?? nil, filter.selects(record.listing, now: now),
                let issued = record.aliases.first(where: { $0.alias == alias })
            else {
                page.missing += 1
                continue
            }
            page.rows.append(
                ExportRow(
                    record: record.id, alias: alias, format: issued.format,
                    value: open ? try self.open(record, in: store).value : "",
                    createdAt: record.createdAt))
        }
        return page
    }
}
