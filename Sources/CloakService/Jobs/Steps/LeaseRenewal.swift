/// When a job's lease is renewed: once a third of it has passed since it last was (a commit
/// renews it too), so a lease never lapses while its node works, however long or short its
/// waits, and a stalled node's lapses within a lease. Pure: the time is given (seconds).
struct LeaseRenewal: Equatable {
    let leaseSeconds: Int
    private(set) var last: Double

    init(leaseSeconds: Int, renewedAt now: Double) {
        self.leaseSeconds = leaseSeconds
        last = now
    }

    /// A lease not renewed yet (the first look renews it).
    static func due(leaseSeconds: Int) -> LeaseRenewal {
        LeaseRenewal(leaseSeconds: leaseSeconds, renewedAt: -.infinity)
    }

    func isDue(at now: Double) -> Bool { now - last >= Double(leaseSeconds) / 3 }

    mutating func renewed(at now: Double) { last = now }
}
