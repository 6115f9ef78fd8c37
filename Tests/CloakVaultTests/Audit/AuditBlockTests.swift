import CloakCrypto
import Testing

@testable import CloakVault

/// A commit's events sealed as one block (issue 59's audit cost): one packed body, one MAC;
/// bodies that are not exactly one encoding read as nothing; searches merge blocks that overlap
/// in time into one newest-first order, a page at a time, without a sort of the window.
@Suite struct AuditBlockTests {
    static let key = HMACKey(SymmetricKey([UInt8](repeating: 3, count: 32)))

    static func draft(_ at: Int64, _ action: AuditAction = .create, ref: String? = nil) -> AuditEvent.Draft {
        AuditEvent.Draft(
            at: at, action: action, tokenID: "tok", client: "192.0.2.1", aliasReference: ref, result: .ok,
            facts: [AuditEvent.Fact("via", "api"), AuditEvent.Fact("ünïcode", "\"quoted\"\n")])
    }

    @Test func aBodyReadsBackAsWritten() throws {
        let drafts = [Self.draft(1, ref: "ar_1"), Self.draft(-5, .reveal), Self.draft(.max, AuditAction(stored: ""))]
        let body = AuditBlockBody.encode(drafts)
        #expect(AuditBlockBody.decode(body) == drafts)
        // Index keys: a reference's 64 bits; one that is not a reference has none.
        #expect(AuditBlockBody.aliasReferenceKeys(body) == [])
        let twice = AuditBlockBody.encode([
            Self.draft(1, ref: "ar_00000000000000ff"), Self.draft(2, ref: "ar_ffffffffffffffff"),
            Self.draft(3, ref: "ar_00000000000000ff"), Self.draft(4, ref: "ar_00000000000000fg"),
        ])
        #expect(AuditBlockBody.aliasReferenceKeys(twice) == [255, -1])
        #expect(AuditReferenceKey.key("ar_0123456789abcdef") == 0x0123_4567_89ab_cdef)
        #expect(AuditReferenceKey.key("ar_0123456789ABCDEF") == nil && AuditReferenceKey.key("ar_0123") == nil)
        #expect(AuditBlockBody.decode(AuditBlockBody.encode([AuditEvent.Draft]())) == [])
    }

    @Test func aBodyThatIsNotExactlyOneEncodingReadsAsNothing() {
        let body = AuditBlockBody.encode([Self.draft(1, ref: "ar_1")])
        #expect(AuditBlockBody.decode(body + [0]) == nil)  // a trailing byte
        #expect(AuditBlockBody.aliasReferenceKeys(body + [0]) == nil)
        #expect(AuditBlockBody.aliasReferenceKeys(Array(body.dropLast())) == nil)
        #expect(AuditBlockBody.decode(Array(body.dropLast())) == nil)  // cut short
        #expect(AuditBlockBody.decode([]) == nil)
        #expect(AuditBlockBody.decode([0xFF, 0xFF, 0xFF, 0xFF]) == nil)  // four billion events
        // A length past the end, and text that is not UTF-8.
        var long = body
        long[15] = 0x7F
        #expect(AuditBlockBody.decode(long) == nil)
        let bad = AuditBlockBody.encode([Self.draft(1, AuditAction(stored: "x"))])
        var invalid = bad
        let at = try! #require(invalid.firstIndex(of: UInt8(ascii: "x")))
        invalid[at] = 0xC3
        #expect(AuditBlockBody.decode(invalid) == nil)
    }

    @Test func aBatchIsOneBlockUnlessItSpansTooLong() {
        var chain = AuditChain(id: "n/1/0", key: Self.key)
        let one = chain.seal((0..<50).map { Self.draft(1_000 + Int64($0)) })
        #expect(one.count == 1 && one[0].first == 1 && one[0].summary?.last == 50)
        #expect(chain.seq == 50 && chain.head == one[0].mac)
        // Events stamped further apart than a block may span: split, the chain unbroken.
        let span = AuditBlock.maxSpanMilliseconds
        let split = chain.seal([Self.draft(0), Self.draft(span), Self.draft(span + 1), Self.draft(5)])
        #expect(split.map(\.first) == [51, 53])
        #expect(split[0].previousMAC == one[0].mac && split[1].previousMAC == split[0].mac)
        #expect(split.allSatisfy { AuditChain.isAuthentic($0, key: Self.key) })
        // Moved, the MAC no longer holds (the place is in it).
        var moved = split[1]
        moved.first += 1
        #expect(!AuditChain.isAuthentic(moved, key: Self.key))
    }

    /// Blocks of two chains that overlap in time, served newest first by their latest event.
    private static func store(_ blocks: [AuditBlock]) -> [StoredAuditBlock] {
        blocks.enumerated().map {
            StoredAuditBlock(
                id: Int64($0.offset + 1), lastAt: $0.element.summary!.lastAt, lastSeq: $0.element.summary!.last,
                block: $0.element)
        }
        .sorted { ($0.lastAt, $0.id) > ($1.lastAt, $1.id) }
    }

    private static func fetch(_ stored: [StoredAuditBlock]) -> AuditSearch.Fetch {
        { (before, limit) throws(StoreError) in
            Array(
                stored.filter { b in before.map { (b.lastAt, b.id) < ($0.lastAt, $0.id) } ?? true }.prefix(limit))
        }
    }

    @Test func aSearchMergesOverlappingBlocksNewestFirstPageByPage() throws {
        var a = AuditChain(id: "a", key: Self.key), b = AuditChain(id: "b", key: Self.key)
        var blocks: [AuditBlock] = []
        // 300 commits each, times interleaved and out of order within a block.
        for i in 0..<100 {
            let t = Int64(i) * 10
            blocks += a.seal([Self.draft(t + 5), Self.draft(t + 1, ref: i % 7 == 0 ? "ar_x" : nil)])
            blocks += b.seal([Self.draft(t + 3), Self.draft(t + 9), Self.draft(t + 5)])
        }
        let stored = Self.store(blocks)
        let everything = blocks.flatMap(\.events).sorted { AuditSearch.isNewer($0, than: $1) }
        for (limit, scanLimit) in [(1, AuditSearch.scanLimit), (7, 3), (100, 500), (2000, AuditSearch.scanLimit)] {
            var seen: [AuditEvent] = []
            var query = AuditQuery(limit: limit)
            var pages = 0
            while pages < 5000 {
                var search = AuditSearch(query)
                search.scanLimit = scanLimit
                let page = try search.run(Self.fetch(stored))
                #expect(page.events.count <= limit)
                seen += page.events
                pages += 1
                guard let next = page.next else { break }
                query.cursor = next
            }
            let differs = zip(seen, everything).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(
                seen.count == everything.count && differs == nil,
                "limit \(limit), scan \(scanLimit): \(seen.count) of \(everything.count), first difference at \(differs.map(String.init) ?? "-")"
            )
        }
        // Filters and a window, with the cursor of a full page.
        var query = AuditQuery(from: 200, until: 700, action: "create", aliasReference: "ar_x", limit: 3)
        let expected = everything.filter {
            (200..<700).contains($0.draft.at) && $0.draft.aliasReference == "ar_x"
        }
        var seen: [AuditEvent] = []
        while true {
            let page = try AuditSearch(query).run(Self.fetch(stored))
            seen += page.events
            guard let next = page.next else { break }
            query.cursor = next
        }
        #expect(seen.map(\.seq) == expected.map(\.seq) && !expected.isEmpty)
    }
}
