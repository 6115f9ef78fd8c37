/// Which audit events to read, newest first (`GET /admin/audit`): every filter given must
/// match; a page ends where ``cursor`` says the next begins.
package struct AuditQuery: Sendable, Equatable {
    /// Milliseconds since the epoch: events at or after `from`, before `until`.
    package var from: Int64?
    package var until: Int64?
    package var action: String?
    package var tokenID: String?
    package var result: String?
    package var aliasReference: String?
    /// The last event of the page before: this page starts after it.
    package var cursor: Cursor?
    package var limit: Int

    package init(
        from: Int64? = nil, until: Int64? = nil, action: String? = nil, tokenID: String? = nil,
        result: String? = nil, aliasReference: String? = nil, cursor: Cursor? = nil, limit: Int = 100
    ) {
        self.from = from
        self.until = until
        self.action = action
        self.tokenID = tokenID
        self.result = result
        self.aliasReference = aliasReference
        self.cursor = cursor
        self.limit = limit
    }

    /// A place in the newest-first order: time, then chain, then place in the chain.
    package struct Cursor: Sendable, Equatable {
        package var at: Int64
        package var chain: String
        package var seq: Int64

        package init(at: Int64, chain: String, seq: Int64) {
            self.at = at
            self.chain = chain
            self.seq = seq
        }

        package init(after event: AuditEvent) { self.init(at: event.draft.at, chain: event.chain, seq: event.seq) }
    }
}
