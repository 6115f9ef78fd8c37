import Testing

@testable import CloakJobs

/// ``RowRate`` and ``LeaseRenewal`` on a clock of the test's own.
struct RowRateTests {
    static let second: UInt64 = 1_000_000_000

    @Test func startsWithOneBatchThenGoesAtTheRate() {
        // Ten rows a second, batches of five.
        var rate = RowRate(perHour: 36_000, batch: 5, at: 0)
        #expect(rate.take(5, at: 0) == nil)
        // Nothing left: half a second for five rows, asked again after a tenth at most.
        #expect(rate.take(5, at: 0) == 0.1)
        #expect(rate.take(5, at: Self.second / 4) != nil)
        #expect(rate.take(5, at: Self.second / 2) == nil)
    }

    @Test func aStallIsMadeUpByASecondOfRowsAndNoMore() {
        var rate = RowRate(perHour: 36_000, batch: 5, at: 0)
        #expect(rate.take(5, at: 0) == nil)
        // A minute idle fills the bucket to a second's rows (ten), not a minute's.
        #expect(rate.take(5, at: 60 * Self.second) == nil)
        #expect(rate.take(5, at: 60 * Self.second) == nil)
        #expect(rate.take(5, at: 60 * Self.second) != nil)
    }

    @Test func aBucketHoldsABatchWhenTheRateIsSlowerThanABatchASecond() {
        // 3,600 an hour is one row a second; batches of four still go whole.
        var rate = RowRate(perHour: 3_600, batch: 4, at: 0)
        #expect(rate.take(4, at: 0) == nil)
        #expect(rate.take(4, at: 2 * Self.second) != nil)
        #expect(rate.take(4, at: 4 * Self.second) == nil)
        #expect(rate.take(4, at: 100 * Self.second) == nil)
        #expect(rate.take(1, at: 100 * Self.second) != nil)
    }

    @Test func aLeaseIsRenewedAfterAThirdOfIt() {
        var lease = LeaseRenewal(renewedAt: 1_000)
        #expect(!lease.isDue(at: 1_009.9, leaseSeconds: 30))
        #expect(lease.isDue(at: 1_010, leaseSeconds: 30))
        lease.renewed(at: 1_010)
        #expect(!lease.isDue(at: 1_019, leaseSeconds: 30))
        // A lease shortened by a reload is renewed by the new length.
        #expect(lease.isDue(at: 1_015, leaseSeconds: 15))
        #expect(LeaseRenewal.due.isDue(at: 0, leaseSeconds: 30))
    }
}
