/// When a job's lease is renewed: once a third of it has passed since it last was (a commit
/// renews it too), so a lease never lapses while its node works, however long or short its
/// waits, and a stalled node's lapses within a lease. The lease's length is asked each time
/// (`jobs.lease_s` as the node serves it now: a reload may change it mid-job). Pure: the time
/// is given (seconds).
package struct LeaseRenewal: Equatable {
    private(set) var last: Double

    init(renewedAt now: Double) { last = now }

    /// A lease not renewed yet (the first look renews it).
    static var due: LeaseRenewal { LeaseRenewal(renewedAt: -.infinity) }

    func isDue(at now: Double, leaseSeconds: Int) -> Bool { now - last >= Double(leaseSeconds) / 3 }

    mutating func renewed(at now: Double) { last = now }
}
