import CloakCrypto
import CloakVault
import Foundation
import Testing

extension AliasStoreCompatSuite {
    // MARK: Audit events (issue 59)

    /// A chain under a throwaway key, named apart from any other run's on a shared database.
    private static func chain(_ name: String) -> AuditChain {
        AuditChain(
            id: "\(name)/\(UUID().uuidString.prefix(8))",
            key: HMACKey(SymmetricKey([UInt8](repeating: 7, count: 32))))
    }

    /// Whether a block is sealed under the suite's key.
    private static func authentic(_ block: AuditBlock) -> Bool {
        AuditChain.isAuthentic(block, key: HMACKey(SymmetricKey([UInt8](repeating: 7, count: 32))))
    }

    /// An alias reference no other run has: `ar_` and 16 hex digits.
    private static func reference() -> String {
        "ar_" + String(UInt64.random(in: 0...UInt64.max), radix: 16).leftPadded(to: 16)
    }

    private static func draft(
        _ at: Int64, _ action: String, token: String = "t1", result: String = "ok", ref: String? = nil
    ) -> AuditEvent.Draft {
        AuditEvent.Draft(
            at: at, action: AuditAction(stored: action), tokenID: token, client: "203.0.113.9", aliasReference: ref,
            result: AuditResult(stored: result),
            facts: [AuditEvent.Fact("via", "api"), AuditEvent.Fact("note", "quotes \" and \\ survive")])
    }

    func auditEventsAreReadNewestFirstByEveryFilter() throws {
        let store = try makeStore()
        // Far in the future: events other cases (or runs) left on a shared database sort before.
        let base: Int64 = 9_000_000_000_000 + Int64.random(in: 0..<1_000_000) * 1000
        let one = Self.reference(), two = Self.reference()
        var a = Self.chain("node-a"), b = Self.chain("node-b")
        let first = a.seal([
            Self.draft(base + 1, "create", ref: one), Self.draft(base + 3, "reveal", token: "t2", ref: one),
        ])
        let second = b.seal([
            Self.draft(base + 2, "reveal", result: "not_found"), Self.draft(base + 3, "delete", ref: two),
        ])
        // One block a commit: the two overlap in time, so the merge is what orders them.
        #expect(first.count == 1 && second.count == 1)
        try transaction(store) { try store.appendAuditBlocks(first + second) }
        // Rolled back: never seen.
        var lost = a
        try store.begin()
        try store.appendAuditBlocks(lost.seal([Self.draft(base + 9, "create")]))
        store.rollback()

        let events = (first + second).flatMap(\.events)
        let newestFirst = events.sorted { ($0.draft.at, $0.chain, $0.seq) > ($1.draft.at, $1.chain, $1.seq) }
        let all = try store.auditEvents(AuditQuery(from: base, limit: 10))
        #expect(all.events.map(\.draft.at) == [base + 3, base + 3, base + 2, base + 1])
        #expect(all == AuditPage(events: newestFirst, next: nil))
        #expect(all.events.last?.draft.facts == events[0].draft.facts)
        #expect(try store.auditEvents(AuditQuery(from: base, action: "reveal")).events.count == 2)
        #expect(try store.auditEvents(AuditQuery(from: base, tokenID: "t2")).events == [events[1]])
        #expect(try store.auditEvents(AuditQuery(from: base, result: "not_found")).events == [events[2]])
        #expect(try store.auditEvents(AuditQuery(from: base + 2, until: base + 3)).events == [events[2]])
        // By alias: found before the index has the blocks (read whole) and after.
        let byAlias = AuditQuery(from: base, aliasReference: one)
        #expect(try store.auditEvents(byAlias).events.map(\.draft.action.text) == ["reveal", "create"])
        while try transaction(store, { try store.indexAuditAliases(limit: 500) }) > 0 {}
        #expect(try store.auditEvents(byAlias).events.map(\.draft.action.text) == ["reveal", "create"])
        #expect(try store.auditEvents(AuditQuery(from: base, aliasReference: two)).events == [events[3]])
        // Pages of one: each event once, in order.
        var paged: [AuditEvent] = []
        var query = AuditQuery(from: base, limit: 1)
        while true {
            let page = try store.auditEvents(query)
            paged += page.events
            guard let next = page.next else { break }
            query.cursor = next
        }
        #expect(paged == newestFirst)
        // A page that reads only so much answers what it has and where to go on: followed, the
        // same events, in the same order.
        var budgeted: [AuditEvent] = []
        var pages = 0
        query = AuditQuery(from: base, limit: 10)
        while true {
            let page = try store.auditEvents(query, scanLimit: 1)
            budgeted += page.events
            pages += 1
            guard let next = page.next, pages < 100 else { break }
            query.cursor = next
        }
        #expect(budgeted == newestFirst)
        #expect(AuditChain.isAuthentic(first[0], key: HMACKey(SymmetricKey([UInt8](repeating: 7, count: 32)))))
    }

    func auditChainsAreReadInPlaceOrderAndTrimmedByTime() throws {
        let store = try makeStore()
        var a = Self.chain("trim")
        let reference = Self.reference()
        // Five commits, one block each; two events in the last.
        var blocks: [AuditBlock] = []
        for at in 1...4 { blocks += a.seal([Self.draft(Int64(at), "create", ref: reference)]) }
        blocks += a.seal([Self.draft(5, "create"), Self.draft(6, "reveal")])
        try transaction(store) { try store.appendAuditBlocks(blocks) }
        while try transaction(store, { try store.indexAuditAliases(limit: 500) }) > 0 {}
        #expect(try store.auditChains().contains(a.id))
        #expect(try store.auditChain(a.id, after: 0, limit: 2).map(\.block) == Array(blocks[0..<2]))
        #expect(try store.auditChain(a.id, after: 2, limit: 10).map(\.block) == Array(blocks[2...]))
        // Rows are found by the place they start at.
        #expect(try store.auditChain(a.id, after: 4, limit: 10).map(\.block) == [blocks[4]])
        #expect(try store.auditChain(a.id, after: 5, limit: 10).isEmpty)
        #expect(try store.auditChain(a.id, after: .min, limit: 10).map(\.lastSeq) == [1, 2, 3, 4, 6])
        // Only what is older than the cut, up to the limit, from the chain's start; its new start.
        let starts = try transaction(store) {
            try store.deleteAuditBlocks(before: 4, limit: 2, authentic: Self.authentic)
        }
        #expect(starts[a.id] == AuditTrim.Start(first: 3, gone: false))
        #expect(try store.auditChain(a.id, after: 0, limit: 10).map(\.block.first) == [3, 4, 5])
        let byAlias = AuditQuery(from: 0, aliasReference: reference)
        #expect(try store.auditEvents(byAlias).events.map(\.seq) == [4, 3])
        // A block goes only whole: the last one's second event is young.
        let rest = try transaction(store) {
            try store.deleteAuditBlocks(before: 6, limit: 1000, authentic: Self.authentic)
        }
        #expect(rest[a.id] == AuditTrim.Start(first: 5, gone: false))
        let all = try transaction(store) {
            try store.deleteAuditBlocks(before: 100, limit: 1000, authentic: Self.authentic)
        }
        #expect(all[a.id] == AuditTrim.Start(first: 7, gone: true))
        #expect(try store.auditChain(a.id, after: 0, limit: 10).isEmpty)
        #expect(try store.auditEvents(byAlias).events.isEmpty)
        // Times need not rise along a chain (an event is stamped when made, not when sealed):
        // the sweep stops at the first young block, and leaves no hole.
        var b = Self.chain("holes")
        var mixed: [AuditBlock] = []
        for at in [1, 50, 2, 60] { mixed += b.seal([Self.draft(Int64(at), "create")]) }
        try transaction(store) { try store.appendAuditBlocks(mixed) }
        let cut = try transaction(store) {
            try store.deleteAuditBlocks(before: 10, limit: 1000, authentic: Self.authentic)
        }
        #expect(cut[b.id] == AuditTrim.Start(first: 2, gone: false))
        #expect(try store.auditChain(b.id, after: 0, limit: 10).map(\.block.first) == [2, 3, 4])
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
