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

    private static func draft(
        _ at: Int64, _ action: String, token: String = "t1", result: String = "ok", ref: String? = nil
    ) -> AuditEvent.Draft {
        AuditEvent.Draft(
            at: at, action: action, tokenID: token, client: "203.0.113.9", aliasReference: ref, result: result,
            facts: [AuditEvent.Fact("via", "api"), AuditEvent.Fact("note", "quotes \" and \\ survive")])
    }

    func auditEventsAreReadNewestFirstByEveryFilter() throws {
        let store = try makeStore()
        // Far in the future: events other cases (or runs) left on a shared database sort before.
        let base: Int64 = 9_000_000_000_000 + Int64.random(in: 0..<1_000_000) * 1000
        var a = Self.chain("node-a"), b = Self.chain("node-b")
        let first = a.seal([
            Self.draft(base + 1, "create", ref: "ar_01"), Self.draft(base + 3, "reveal", token: "t2", ref: "ar_01"),
        ])
        let second = b.seal([
            Self.draft(base + 2, "reveal", result: "not_found"), Self.draft(base + 3, "delete", ref: "ar_02"),
        ])
        try transaction(store) { try store.appendAuditEvents(first + second) }
        // Rolled back: never seen.
        var lost = a
        try store.begin()
        try store.appendAuditEvents(lost.seal([Self.draft(base + 9, "create")]))
        store.rollback()

        let all = try store.auditEvents(AuditQuery(from: base, limit: 10))
        #expect(all.map(\.draft.at) == [base + 3, base + 3, base + 2, base + 1])
        #expect(all == (first + second).sorted { ($0.draft.at, $0.chain, $0.seq) > ($1.draft.at, $1.chain, $1.seq) })
        #expect(all.last?.draft.facts == first[0].draft.facts)
        #expect(try store.auditEvents(AuditQuery(from: base, action: "reveal")).count == 2)
        #expect(try store.auditEvents(AuditQuery(from: base, tokenID: "t2")) == [first[1]])
        #expect(try store.auditEvents(AuditQuery(from: base, result: "not_found")) == [second[0]])
        #expect(
            try store.auditEvents(AuditQuery(from: base, aliasReference: "ar_01")).map(\.draft.action) == [
                "reveal", "create",
            ])
        #expect(try store.auditEvents(AuditQuery(from: base + 2, until: base + 3)) == [second[0]])
        // Pages of one: each event once, in order.
        var paged: [AuditEvent] = []
        var query = AuditQuery(from: base, limit: 1)
        while let event = try store.auditEvents(query).first {
            paged.append(event)
            query.cursor = AuditQuery.Cursor(after: event)
        }
        #expect(paged == all)
        #expect(AuditChain.isAuthentic(all[0], key: HMACKey(SymmetricKey([UInt8](repeating: 7, count: 32)))))
    }

    func auditChainsAreReadInPlaceOrderAndTrimmedByTime() throws {
        let store = try makeStore()
        var a = Self.chain("trim")
        let events = a.seal((1...5).map { Self.draft(Int64($0), "create") })
        try transaction(store) { try store.appendAuditEvents(events) }
        #expect(try store.auditChains().contains(a.id))
        #expect(try store.auditChain(a.id, after: 0, limit: 2) == Array(events[0..<2]))
        #expect(try store.auditChain(a.id, after: 2, limit: 10) == Array(events[2...]))
        // Only what is older than the cut, up to the limit, from the chain's start; its new start.
        let starts = try transaction(store) { try store.deleteAuditEvents(before: 4, limit: 2) }
        #expect(starts[a.id] == AuditTrim.Start(first: 3, gone: false))
        #expect(try store.auditChain(a.id, after: 0, limit: 10).map(\.seq) == [3, 4, 5])
        let rest = try transaction(store) { try store.deleteAuditEvents(before: 100, limit: 1000) }
        #expect(rest[a.id] == AuditTrim.Start(first: 6, gone: true))
        #expect(try store.auditChain(a.id, after: 0, limit: 10).isEmpty)
        // Times need not rise along a chain (an event is stamped when made, not when sealed):
        // the sweep stops at the first young one, and leaves no hole.
        var b = Self.chain("holes")
        let mixed = b.seal([1, 50, 2, 60].map { Self.draft(Int64($0), "create") })
        try transaction(store) { try store.appendAuditEvents(mixed) }
        let cut = try transaction(store) { try store.deleteAuditEvents(before: 10, limit: 1000) }
        #expect(cut[b.id] == AuditTrim.Start(first: 2, gone: false))
        #expect(try store.auditChain(b.id, after: 0, limit: 10).map(\.seq) == [2, 3, 4])
    }
}
