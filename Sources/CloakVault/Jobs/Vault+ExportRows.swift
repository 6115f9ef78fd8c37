import CloakCore

/// One line of a rows export (issue 76): a group's parts by field name, or a record that is in
/// no group (stored before groups, or alone) as a group of one, its part named `value`.
package struct ExportGroupRow: Sendable, Equatable {
    package struct Part: Sendable, Equatable {
        package var name: String
        package var record: String
        package var alias: String
        /// Empty while the selection is only counted.
        package var value: String

        package init(name: String, record: String, alias: String, value: String) {
            (self.name, self.record, self.alias, self.value) = (name, record, alias, value)
        }
    }

    /// nil: a group of one.
    package var group: String?
    package var parts: [Part]
    /// The parts' metadata, each key once (the first part's that holds it), Cloak's own aside.
    package var metadata: [String: String]
    /// Parts of the group an export may not take (a VOLATILE value, an expired or deleted one):
    /// left out of the line, and counted in the job's status.
    package var leftOut: Int

    package init(group: String?, parts: [Part], metadata: [String: String], leftOut: Int) {
        (self.group, self.parts, self.metadata, self.leftOut) = (group, parts, metadata, leftOut)
    }

    /// The name of a group of one's part.
    package static let singleField = "value"
}

/// A page of a rows export: its rows and where the next page starts (nil: the last).
package struct ExportGroupPage: Sendable {
    package var rows: [ExportGroupRow] = []
    package var next: String?

    package init(rows: [ExportGroupRow] = [], next: String? = nil) {
        self.rows = rows
        self.next = next
    }
}

extension Vault {
    /// Up to `limit` groups after group `after` (in id order), those `filter` selects, each
    /// whole: a group is selected when one of its parts is, and every part an export may take
    /// is in its row (values opened when `open`). A group made after the selection's second (its
    /// sealed time) is not. A group whose body does not open fails the page (a database writer
    /// altered it, or moved its time).
    package func exportGroups(
        after: String?, limit: Int, filter: ExportFilter, open: Bool, in store: any AliasStore
    ) throws -> ExportGroupPage {
        let groups = try store.groups(after: after, limit: limit, withMembers: false)
        var page = ExportGroupPage(next: groups.count == limit ? groups.last?.id : nil)
        var bodies: [(StoredGroup, RecordGroup)] = []
        for group in groups {
            // Every group is opened, then its sealed time read: one whose row a database writer
            // moved past the counted second fails the page rather than leaving the export.
            guard let body = self.open(group) else {
                throw VaultError.unavailable("group \(group.id) does not open (altered in the store)")
            }
            if body.createdAt <= filter.asOf { bodies.append((group, body)) }
        }
        let found = try store.groupMembers(bodies.map(\.0.id))
        let now = clock()
        for (group, body) in bodies {
            var row = ExportGroupRow(group: group.id, parts: [], metadata: [:], leftOut: 0)
            var selected = false
            for field in body.fields {
                // The record the body names, still holding the alias it names.
                guard let record = found[field.recordID],
                    record.aliases.contains(where: { $0.alias == field.alias.alias }),
                    filter.mayTake(record.listing, now: now)
                else {
                    row.leftOut += 1
                    continue
                }
                selected = selected || filter.selects(record.listing, now: now)
                row.parts.append(
                    ExportGroupRow.Part(
                        name: field.name, record: record.id, alias: field.alias.alias,
                        value: open ? try self.open(record, in: store).value : ""))
                Self.merge(record.metadata, into: &row.metadata)
            }
            if selected { page.rows.append(row) }
        }
        return page
    }

    /// Up to `limit` records after record `after` that are in no group made by the selection's
    /// second, those `filter` selects, each a group of one.
    package func exportUngrouped(
        after: String?, limit: Int, filter: ExportFilter, open: Bool, in store: any AliasStore
    ) throws -> ExportGroupPage {
        // Listings first (no sealed value), then the whole records of the rows taken: by their
        // aliases when they are few (most records written since groups are in one), else the
        // page again in one statement (a store written before groups: every record is a row).
        let listings = try store.recordListings(after: after, limit: limit)
        var page = ExportGroupPage(next: listings.count == limit ? listings.last?.id : nil)
        let grouped = try store.groupedRecords(listings.map(\.id), asOf: filter.asOf)
        let now = clock()
        var taken: [(listing: RecordListing, alias: String)] = []
        for listing in listings where !grouped.contains(listing.id) && filter.selects(listing, now: now) {
            guard let alias = listing.aliases.first(where: { isAuthentic($0, recordID: listing.id) }) else { continue }
            taken.append((listing, alias.alias))
        }
        var records: [String: StoredRecord] = [:]
        if open && !taken.isEmpty {
            if taken.count * 4 < listings.count {
                records = try store.records(aliases: taken.map(\.alias))
            } else {
                let wanted = Dictionary(taken.map { ($0.listing.id, $0.alias) }, uniquingKeysWith: { a, _ in a })
                for record in try store.records(after: after, limit: limit) {
                    if let alias = wanted[record.id] { records[alias] = record }
                }
            }
        }
        for (listing, alias) in taken {
            var value = ""
            if open {
                // Read as listed: the same record still holding the alias (a delete in between fails
                // the page rather than writing another value).
                guard let record = records[alias], record.id == listing.id else {
                    throw VaultError.unavailable("record \(listing.id) changed while its page was read")
                }
                value = try self.open(record, in: store).value
            }
            var metadata: [String: String] = [:]
            Self.merge(listing.metadata, into: &metadata)
            page.rows.append(
                ExportGroupRow(
                    group: nil,
                    parts: [
                        ExportGroupRow.Part(
                            name: ExportGroupRow.singleField, record: listing.id, alias: alias, value: value)
                    ], metadata: metadata, leftOut: 0))
        }
        return page
    }

    /// A part's metadata into its row's: keys not there yet, Cloak's own (`cloak:`) aside.
    private static func merge(_ metadata: [String: String], into row: inout [String: String]) {
        for (key, value) in metadata where !key.hasPrefix("cloak:") && row[key] == nil { row[key] = value }
    }
}
