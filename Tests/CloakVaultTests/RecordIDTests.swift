import Testing

@testable import CloakVault

@Suite struct RecordIDTests {
    @Test func idsMadeWithinOneSecondSortInTheOrderTheyWereMade() {
        // Within a second only the sequence orders ids; past its 2^24 wrap one pair may invert.
        let ids = (0..<2000).map { _ in RecordID.make(now: 1_790_000_000) }
        let inversions = zip(ids, ids.dropFirst()).filter { !$0.0.utf8.lexicographicallyPrecedes($0.1.utf8) }.count
        #expect(inversions <= 1)
        #expect(Set(ids).count == ids.count)
    }

    @Test func aLaterSecondSortsAfterEveryIdOfAnEarlierOne() {
        let earlier = (0..<50).map { _ in RecordID.make(now: 1_790_000_000) }
        let later = RecordID.make(now: 1_790_000_001)
        #expect(earlier.allSatisfy { $0.utf8.lexicographicallyPrecedes(later.utf8) })
    }

    @Test func idsKeepTheirShape() {
        for now: Int64 in [0, 1_790_000_000, Int64(UInt32.max), -5] {
            let id = RecordID.make(now: now)
            #expect(id.hasPrefix("rec_") && id.utf8.count == 26)
        }
    }
}
