/// One page of an audit search: the events, newest first, and where the next page starts (nil:
/// nothing more matches). A page may hold fewer events than asked for, even none, and still
/// have a next: the search read as many events as one page may (``AuditSearch/scanLimit``).
package struct AuditPage: Sendable, Equatable {
    package var events: [AuditEvent]
    package var next: AuditQuery.Cursor?

    package init(events: [AuditEvent], next: AuditQuery.Cursor?) {
        self.events = events
        self.next = next
    }
}

/// An audit search over blocks (``AuditBlock``), newest first by (time, chain, place): blocks
/// come from the store by their latest event, newest first, and their events are merged. An
/// event is final once every block not yet read must hold only events at or before the
/// latest time of the last block read (they are ordered by it), so no sort of the whole window
/// is ever needed; a page reads at most ``scanLimit`` events, then ends where it got to.
///
/// Pure: `fetch` reads the store (``AliasStore/auditBlocks(before:from:aliasReference:limit:)``).
package struct AuditSearch {
    /// The most events one page decodes before it answers with what it has.
    package static let scanLimit = 20_000
    /// Blocks read at a time (the budget is checked after each).
    static let blocksPerRead = 32

    package typealias Fetch = (_ before: AuditBlockPosition?, _ limit: Int) throws(StoreError) -> [StoredAuditBlock]

    package let query: AuditQuery
    package var scanLimit = AuditSearch.scanLimit

    package init(_ query: AuditQuery) { self.query = query }

    package func run(_ fetch: Fetch) throws(StoreError) -> AuditPage {
        let limit = max(1, query.limit)
        // No event of this page is later than this (the cursor's time, or `until`), and so (a
        // block's events span at most ``AuditBlock/maxSpanMilliseconds``) no block later than
        // that and a span can hold one. (Times near Int64's end: from the newest block.)
        let ceiling: Int64? = [query.cursor?.at, query.until].compactMap { $0 }.min()
        let span = AuditBlock.maxSpanMilliseconds
        var position = ceiling.flatMap {
            $0 < .max - span - 1 ? AuditBlockPosition(lastAt: $0 + span + 1, id: .min) : nil
        }
        var pending: [AuditEvent] = []
        var out: [AuditEvent] = []
        var scanned = 0
        while true {
            let blocks = try fetch(position, Self.blocksPerRead)
            let done = blocks.count < Self.blocksPerRead
            // Where the page stops for its budget: after a block, once enough was read, and only
            // below where the page began (blocks within a span above it are read again by the
            // page after), so that each page gets further than the one before.
            var stopped: Int64?
            for (index, stored) in blocks.enumerated() {
                for event in stored.block.events {
                    // What lies above this page (read again within a block's span) is not counted.
                    if let ceiling, event.draft.at > ceiling { continue }
                    scanned += 1
                    if query.matches(event) { pending.append(event) }
                }
                let lastRead = done && index == blocks.count - 1
                if scanned >= scanLimit, !lastRead, stored.lastAt < (ceiling ?? .max) - 1 {
                    stopped = stored.lastAt
                    break
                }
            }
            // Every block still unread ends at or before the last one read: events after it are final.
            let bound = stopped ?? (done ? nil : blocks.last?.lastAt)
            pending.sort { Self.isNewer($0, than: $1) }
            var taken = 0
            for event in pending {
                if let bound, event.draft.at <= bound { break }
                out.append(event)
                taken += 1
                if out.count == limit {
                    let last = done && stopped == nil && taken == pending.count
                    return AuditPage(events: out, next: last ? nil : .init(after: event))
                }
            }
            pending.removeFirst(taken)
            // Everything after `stopped` is answered; the next page goes on from it.
            if let stopped {
                return AuditPage(events: out, next: AuditQuery.Cursor(at: stopped + 1, chain: "", seq: 0))
            }
            guard bound != nil, let last = blocks.last else { return AuditPage(events: out, next: nil) }
            position = last.position
        }
    }

    /// The newest-first order: time, then chain, then place, each descending.
    static func isNewer(_ a: AuditEvent, than b: AuditEvent) -> Bool {
        (a.draft.at, a.chain, a.seq) > (b.draft.at, b.chain, b.seq)
    }
}

extension AuditQuery {
    /// Whether `event` is one this query asks for and comes after its cursor.
    func matches(_ event: AuditEvent) -> Bool {
        let d = event.draft
        if let from, d.at < from { return false }
        if let until, d.at >= until { return false }
        if let action, d.action.text != action { return false }
        if let tokenID, d.tokenID != tokenID { return false }
        if let result, d.result.text != result { return false }
        if let aliasReference, d.aliasReference != aliasReference { return false }
        if let cursor, (d.at, event.chain, event.seq) >= (cursor.at, cursor.chain, cursor.seq) { return false }
        return true
    }
}

extension AliasStore {
    /// The audit events that match `query`, newest first, a page at a time (``AuditSearch``).
    package func auditEvents(_ query: AuditQuery, scanLimit: Int = AuditSearch.scanLimit) throws(StoreError)
        -> AuditPage
    {
        var search = AuditSearch(query)
        search.scanLimit = scanLimit
        return try search.run { (before, limit) throws(StoreError) in
            // A block whose latest event is before `from` holds none at or after it.
            try auditBlocks(before: before, from: query.from, aliasReference: query.aliasReference, limit: limit)
        }
    }
}

extension AliasStore {
    /// What the retention sweep may delete of `chain`: its rows from its start up to (not with)
    /// the first that is not `authentic`, does not read, or holds an event from `at` on (by the
    /// sealed events' times, not the row's column), at most `limit`; and the place of the last
    /// event among them. Nil: none.
    func sweepableAuditBlocks(of chain: String, before at: Int64, limit: Int, authentic: (AuditBlock) -> Bool)
        throws(StoreError) -> (blocks: [StoredAuditBlock], last: Int64)?
    {
        var old: [StoredAuditBlock] = []
        var last: Int64?
        for stored in try auditChain(chain, after: .min, limit: limit) {
            guard let summary = stored.block.summary, summary.lastAt < at, authentic(stored.block) else { break }
            old.append(stored)
            last = summary.last
        }
        return last.map { (old, $0) }
    }
}
